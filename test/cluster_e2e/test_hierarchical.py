"""Hierarchical collectives across the two hosts of scripts/cluster/up.sh 2: shared memory
within a host, TCP between hosts, chosen automatically when the ranks share hosts evenly.

Each case runs tests/cluster_e2e/hierarchical_worker.py (known values at every size) and reads
rank 0's timeline to see which algorithm ran: HIER_ALLREDUCE (hierarchical) or TCP_ALLREDUCE.
"""
import json
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_mpi_and_torch import PYTHONPATH, clean_env  # noqa: E402
from test_multi_host import SSH, assert_hosts_clean, kill_leftovers, run, unique_marker  # noqa

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hierarchical_worker.py")
HVD_BENCH = os.environ.get("HVD_BENCH", "")
E2E_WORKER = os.environ.get("HVD_E2E_WORKER", "")

pytestmark = pytest.mark.skipif(not os.path.isdir(os.path.join(PYTHONPATH, "hvd")),
                                reason="the hvd Python package is not built")


def run_worker(tmp_path, hosts, np=4, flags=(), **env):
    timeline = tmp_path / "timeline.json"
    result = run(SSH + list(flags) + ["-np", str(np), "-H", hosts, "--timeline", str(timeline),
                                      "/usr/bin/python3", WORKER],
                 timeout=300, env=clean_env(PYTHONPATH=PYTHONPATH, OMP_NUM_THREADS="1", **env))
    out, err = result.stdout.decode(), result.stderr.decode()
    activities = set()
    if timeline.exists():
        events = [e for e in json.loads(timeline.read_text() or "[]") if isinstance(e, dict)]
        tensors = {e["pid"]: e["args"]["name"] for e in events
                   if e.get("ph") == "M" and e.get("name") == "process_name"}
        for event in events:
            name = event.get("name", "")
            if name.endswith(("_ALLREDUCE", "_REDUCESCATTER", "_FUSION_BUFFER", "_ALLGATHER",
                              "_BCAST", "_ALLTOALL")):
                activities.add(name)
                # and which tensor it was for (a grouped op's members are NAME_0, NAME_1, ...)
                activities.add(f"{tensors.get(event.get('pid'), '?')}:{name}")
    return result.returncode, out, err, activities


def test_two_hosts_of_two_ranks_use_the_hierarchy_by_default(tmp_path):
    code, out, err, activities = run_worker(tmp_path, "hvd-h1:2,hvd-h2:2")
    assert code == 0, out + err
    assert sorted(l for l in out.splitlines() if "OK rank" in l) == [
        f"[{r}]<stdout>:OK rank {r}" for r in range(4)], out
    assert "HIER_ALLREDUCE" in activities and "TCP_ALLREDUCE" not in activities, activities
    assert "HIER_EAGER_ALLREDUCE" in activities, activities
    assert "HIER_REDUCESCATTER" in activities, activities
    # The fused groups ran on the tensors themselves (shared memory's pieces within the
    # hosts): the allreduce and reducescatter read their inputs in place, the allgather (which
    # packs only its own rows) writes the gathered rows straight into its outputs.
    copies = sorted(a for a in activities if a.endswith("_FUSION_BUFFER") and ":" in a)
    gather = "grouped_allgather.group.ag."
    assert not [a for a in copies if "MEMCPY_IN" in a and not a.startswith(gather)], copies
    assert not [a for a in copies if "MEMCPY_OUT" in a and not a.startswith(
        "grouped_reducescatter.")], copies  # (its slice of the result goes out: 1/n)
    assert [a for a in copies if a.startswith(gather) and "MEMCPY_IN" in a], copies
    # The lone small allgathers, broadcasts and alltoalls rode the negotiation's round (in
    # some steps at least: an idle cycle between two ops disarms it for the next), posting their
    # inputs to the flat group. (hvd.torch names each "<op>.<name>") The lone reducescatter did
    # not: the flat group's posted inputs reduce in rank order, the hierarchy within the host
    # and then across, so it takes the hierarchy's rounds every step (the same bits each time).
    for tensor, op in (("allgather.lone.ag", "ALLGATHER"), ("broadcast.lone.bc", "BCAST"),
                       ("alltoall.lone.a2a", "ALLTOALL")):
        assert f"{tensor}:TCP_EAGER_{op}" in activities, (tensor, activities)
    assert "reducescatter.lone.rs:HIER_REDUCESCATTER" in activities, activities
    assert not [a for a in activities if a.startswith("reducescatter.lone.rs:TCP_")], activities


# The hierarchy's steady state makes no heap allocation, as shared memory's and TCP's do
# (hvd_bench_no_allocs_*): hvd-bench counts every allocation of its timed rounds and exits 3
# when a median round allocates. Sizes on both of its allreduce paths, and fused batches on its
# pieces path (small and large tensors), and a lone small alltoall and allgather (posting their
# inputs with the negotiation's round on the flat group).
@pytest.mark.skipif(not os.path.isfile(HVD_BENCH), reason="hvd-bench is not built")
@pytest.mark.parametrize("mode", [["--sizes", "4K,1M"], ["--many", "20x16K"],
                                  ["--many", "20x128K"], ["--op", "alltoall", "--sizes", "8K"],
                                  ["--op", "allgather", "--sizes", "16K"]],
                         ids=["sizes", "fused", "fused_large", "alltoall", "allgather"])
def test_the_hierarchy_allocates_nothing_in_the_steady_state(mode):
    result = run(SSH + ["-np", "4", "-H", "hvd-h1:2,hvd-h2:2", HVD_BENCH] + mode +
                 ["--rounds", "5", "--round-seconds", "0.05", "--max-allocs-per-op", "0"],
                 timeout=120, env=clean_env())
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0, out + err
    assert "allocs" in out, out


# Every scenario of the C API's worker (test/worker_e2e: every op, dtype and scaling, lone and
# fused, process sets, join, mismatches, re-init), checked by value, over the hierarchy with 4
# ranks per host: shared memory's groups of 4 within the hosts, 8 ranks in all.
@pytest.mark.skipif(not os.path.isfile(E2E_WORKER), reason="hvd_e2e_worker is not built")
def test_c_api_scenarios_on_two_hosts_of_four_ranks():
    result = run(SSH + ["-np", "8", "-H", "hvd-h1:4,hvd-h2:4", "--start-timeout", "60",
                        E2E_WORKER, "all"], timeout=240, env=clean_env())
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0, out + err
    assert out.count("ok on 8 ranks") >= 18 and "FAILED" not in out, out


def test_hierarchical_allreduce_off_uses_tcp_for_the_whole_group(tmp_path):
    code, out, err, activities = run_worker(tmp_path, "hvd-h1:2,hvd-h2:2",
                                            flags=["--no-hierarchical-allreduce"])
    assert code == 0, out + err
    assert "TCP_ALLREDUCE" in activities and "HIER_ALLREDUCE" not in activities, activities
    assert "reducescatter.lone.rs:TCP_EAGER_REDUCESCATTER" in activities, activities


def test_hierarchical_allgather_on_request(tmp_path):
    code, out, err, _ = run_worker(tmp_path, "hvd-h1:2,hvd-h2:2",
                                   flags=["--hierarchical-allgather"])
    assert code == 0, out + err


def test_uneven_hosts_fall_back_to_tcp_unless_the_hierarchy_is_required(tmp_path):
    code, out, err, activities = run_worker(tmp_path, "hvd-h1:3,hvd-h2:1")
    assert code == 0, out + err
    assert "TCP_ALLREDUCE" in activities and "HIER_ALLREDUCE" not in activities, activities
    code, out, err, _ = run_worker(tmp_path, "hvd-h1:3,hvd-h2:1",
                                   flags=["--hierarchical-allreduce"])
    assert code != 0
    assert "spread evenly over its hosts in rank order" in out + err, out + err
    assert "hvd-h1 x3, hvd-h2 x1" in out + err, out + err


KILLED_WORKER = r'''
import os, signal, sys, time
import torch
import hvd.torch as hvd
# hvdrun stops the job once a rank dies; ignore its SIGTERM so that the survivors show what
# their own collectives did (SIGKILL comes after the grace period).
signal.signal(signal.SIGTERM, signal.SIG_IGN)
hvd.init()
begin = time.time()
try:
    for step in range(100000):
        if hvd.rank() == 3 and step == 300:
            print("rank 3 dies at %.3f" % time.time(), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        # A lone small allreduce (from its fifth op the eager round), then a larger one.
        hvd.allreduce(torch.ones(4), name="loss")
        # A lone small allgather (from its third op posting its input with that round).
        hvd.allgather(torch.ones(2), name="rows")
        if step % 10 == 0:
            hvd.allreduce(torch.ones(1 << 15), name="grads")
        if time.time() - begin > 120:
            break
    print("rank %d never failed" % hvd.rank(), flush=True)
    sys.exit(5)
except hvd.HorovodInternalError as error:
    print("rank %d HorovodInternalError at %.3f: %s" % (hvd.rank(), time.time(), error),
          flush=True)
    sys.exit(3)
'''


def test_a_rank_killed_mid_job_fails_every_survivor_on_both_hosts(tmp_path):
    # Given 2 hosts x 2 ranks on the hierarchy, looping on a lone small allreduce (whose
    # negotiation goes within each host, then between hosts) and a larger one,
    marker = unique_marker()
    script = tmp_path / "worker.py"
    script.write_text(KILLED_WORKER)
    try:
        # when rank 3 (hvd-h2) is killed mid-job,
        result = run(SSH + ["-np", "4", "-H", "hvd-h1:2,hvd-h2:2", "--grace-period-seconds", "20",
                            "/usr/bin/python3", str(script), marker],
                     timeout=180, env=clean_env(PYTHONPATH=PYTHONPATH, OMP_NUM_THREADS="1"))
        out = result.stdout.decode() + result.stderr.decode()
        died = re.search(r"rank 3 dies at ([0-9.]+)", out)
        assert died, out
        # then every survivor - its host peer (shared memory), its cross peer (TCP) and the
        # rank that shares neither - raises HorovodInternalError within seconds, none hangs,
        for rank in (0, 1, 2):
            failed = re.search(r"rank %d HorovodInternalError at ([0-9.]+)" % rank, out)
            assert failed, out
            assert float(failed.group(1)) - float(died.group(1)) < 15, out
        assert "never failed" not in out, out
        # and hvdrun fails naming the killed rank.
        assert result.returncode != 0, out
        assert "rank 3" in out, out
        assert_hosts_clean(marker, timeout=30)
    finally:
        kill_leftovers(marker)
