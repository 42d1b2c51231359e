"""Across the two hosts of scripts/cluster/up.sh 2: hvdrun --mpi (Open MPI's mpirun reaching
the hosts over ssh with the cluster's key and known_hosts), and the PyTorch training example
over hvdrun's own SSH path.

The hosts are network namespaces of one machine: Open MPI's out-of-band and TCP traffic is
pinned to their network, 10.77.0.0/24, and its shared-memory BTL (vader) is left out -- both
"hosts" share /dev/shm and the host name, so their segment files would collide.
"""
import os
import re
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_multi_host import (ADDRS, KEY, KNOWN_HOSTS, SSH, assert_hosts_clean,  # noqa: E402
                             kill_leftovers, run, unique_marker)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORKER = os.environ.get("MPI_WORKER", "")
PYTHONPATH = os.environ.get("HVD_TEST_PYTHONPATH", "")
MPI_NET = ("--mca btl self,tcp --mca oob_tcp_if_include 10.77.0.0/24 "
           "--mca btl_tcp_if_include 10.77.0.0/24")
OK_LINE = re.compile(r"^\[1,(\d+)\]<stdout>:OK rank (\d+) size (\d+) local (\d+)/(\d+) "
                     r"cross (\d+)/(\d+) backend (\S+)$")
needs_mpi = pytest.mark.skipif(not WORKER or shutil.which("mpirun") is None,
                               reason="built without MPI or mpirun missing")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HVD_", "HOROVOD_", "OMPI_"))}
    env.update(extra)
    return env


def mpi_run(args, timeout=120, env=None):
    return run(["--mpi", "-i", KEY, "--ssh-known-hosts", KNOWN_HOSTS, "--mpi-args", MPI_NET]
               + args, timeout=timeout, env=env or clean_env())


@needs_mpi
def test_mpi_four_ranks_on_two_hosts_allreduce_with_known_values():
    result = mpi_run(["-np", "4", "-H", "hvd-h1:2,hvd-h2:2", WORKER, "--iterations", "2"])
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0, out + err
    lines = sorted((m for m in map(OK_LINE.match, out.splitlines()) if m),
                   key=lambda m: int(m.group(2)))
    assert len(lines) == 4, out + err
    for rank, m in enumerate(lines):
        # two hosts of two slots: local rank = rank % 2, cross rank = host index
        assert m.groups()[1:] == (str(rank), "4", str(rank % 2), "2", str(rank // 2), "2",
                                  "MPI"), out


@needs_mpi
def test_mpi_ranks_run_on_the_hosts_and_forwarded_variables_arrive():
    # -x VAR through --mpi-args, and hvdrun's own HVD_* forwarding, reach the remote ranks
    result = mpi_run(["--mpi-args", MPI_NET + " -x HVD_E2E_EXTRA", "-np", "4",
                      "-H", "hvd-h1:2,hvd-h2:2", "sh", "-c",
                      "echo $OMPI_COMM_WORLD_RANK $(hostname -I) $HVD_E2E_EXTRA $HVD_CYCLE_TIME"],
                     env=clean_env(HVD_E2E_EXTRA="extra-value", HVD_CYCLE_TIME="2.5"))
    assert result.returncode == 0, result.stderr.decode()
    lines = sorted(result.stdout.decode().splitlines())
    hosts = ["hvd-h1", "hvd-h1", "hvd-h2", "hvd-h2"]
    assert lines == ["[1,%d]<stdout>:%d %s extra-value 2.5" % (r, r, ADDRS[h])
                     for r, h in enumerate(hosts)], lines


@needs_mpi
def test_mpi_remote_rank_failure_gives_its_code_and_leaves_nothing_on_the_hosts():
    marker = unique_marker()
    try:
        result = mpi_run(["-np", "4", "-H", "hvd-h1:2,hvd-h2:2", WORKER, "--fail-rank", "3",
                          "--exit-code", "5", "--iterations", "100000", "--marker", marker])
        assert result.returncode == 5, result.stderr.decode()
        assert_hosts_clean(marker)
    finally:
        kill_leftovers(marker)


@pytest.mark.skipif(not os.path.isdir(os.path.join(PYTHONPATH, "hvd")),
                    reason="the hvd Python package is not built (HVD_BUILD_PYTHON=OFF)")
def test_torch_training_example_on_two_hosts_over_ssh():
    env = clean_env(PYTHONPATH=PYTHONPATH, OMP_NUM_THREADS="1")
    result = run(SSH + ["-np", "4", "-H", "hvd-h1:2,hvd-h2:2", "/usr/bin/python3",
                        os.path.join(REPO, "examples", "torch_train.py"), "--epochs", "2",
                        "--train-samples", "2048", "--test-samples", "512",
                        "--min-accuracy", "0.5"], timeout=240, env=env)
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0, out + err
    epochs = re.findall(r"^\[0\]<stdout>:ranks 4  epoch (\d)  train loss ([0-9.]+)  "
                        r"test accuracy ([0-9.]+)$", out, re.M)
    assert [e[0] for e in epochs] == ["1", "2"], out
    before = float(re.search(r"before training  test accuracy ([0-9.]+)", out).group(1))
    assert float(epochs[-1][2]) > before, out


def test_a_plain_torch_distributed_script_across_hosts_with_rank_0_on_either_side():
    # torchrun's variables across hosts: MASTER_ADDR is rank 0's host (hvdrun's address when
    # rank 0 runs here), and torch's Gloo is given the interface toward hvdrun on each host
    # (GLOO_SOCKET_IFNAME: the namespaces share the host name, which resolves to loopback)
    worker = os.path.join(REPO, "test", "launcher_e2e", "ddp_worker.py")
    # (hosts, MASTER_ADDR, each rank's GROUP_RANK/GROUP_WORLD_SIZE: torchrun's node rank)
    for hosts, master, groups in (("hvd-h1:2,hvd-h2:2", "hvd-h1", ["0/2", "0/2", "1/2", "1/2"]),
                                  ("localhost:1,hvd-h1:1,hvd-h2:1", "10.77.0.1",
                                   ["0/3", "1/3", "2/3"])):
        # A wrong address leaves torch waiting for its store for 30 minutes: --timeout ends
        # the job first, with every rank's stack
        result = run(SSH + ["--timeout", "120", "-np", "4" if "h2:2" in hosts else "3", "-H",
                            hosts, "/usr/bin/python3", worker], timeout=180, env=clean_env())
        out, err = result.stdout.decode(), result.stderr.decode()
        assert result.returncode == 0, hosts + "\n" + out + err
        lines = sorted(out.splitlines())
        n = len(lines)
        assert n in (3, 4), out
        for rank, line in enumerate(lines):
            assert re.fullmatch(r"\[%d\]<stdout>:DDP OK rank %d of %d local \d/\d group %s "
                                r"master %s grad %.1f" % (rank, rank, n, groups[rank],
                                                          re.escape(master), (n + 1) / 2),
                                line), out
