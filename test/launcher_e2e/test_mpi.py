"""hvdrun --mpi through the real Open MPI mpirun (label mpi)."""
import os
import shutil

import pytest

from hvdrun_harness import PYTHON, physical_cores, run

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed")


def test_two_ranks_print_tagged_lines():
    result = run(["--mpi", "-np", "2", "sh", "-c", "echo $OMPI_COMM_WORLD_RANK"])
    assert result.returncode == 0, result.stderr.decode()
    lines = sorted(result.stdout.decode().splitlines())
    assert lines == ["[1,0]<stdout>:0", "[1,1]<stdout>:1"], lines


def test_a_python_print_stays_one_tagged_line():
    # hvdrun's PYTHONUNBUFFERED made every piece of a print() a write of its own, which mpirun
    # tagged apart ("[1,0]<stdout>:rank[1,0]<stdout>: [1,0]<stdout>:0 ...").
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    script = "import os; print('rank', os.environ['OMPI_COMM_WORLD_RANK'], 'of', 2, 'done')"
    result = run(["--mpi", "-np", "2", PYTHON, "-c", script], env=env)
    assert result.returncode == 0, result.stderr.decode()
    lines = sorted(result.stdout.decode().splitlines())
    assert lines == ["[1,0]<stdout>:rank 0 of 2 done", "[1,1]<stdout>:rank 1 of 2 done"], lines


def test_exit_code_propagates():
    result = run(["--mpi", "-np", "2", "sh", "-c",
                  'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exit 3; fi'])
    assert result.returncode == 3, result.stderr.decode()


def test_verbose_and_dry_run_print_the_command():
    result = run(["--mpi", "--dry-run", "-np", "2", "-H", "localhost:2", "--network-interface",
                  "lo", "true"])
    out = result.stdout.decode()
    assert result.returncode == 0
    assert "mpirun" in out and "-np 2 -H localhost:2" in out, out
    assert "-mca btl_tcp_if_include lo -x NCCL_SOCKET_IFNAME=lo" in out, out


def test_ranks_on_this_machine_get_their_share_of_its_cores_as_omp_threads():
    # --worker-threads share (the default) as without --mpi: mpirun starts every rank here, so
    # hvdrun counts the cores and exports OMP_NUM_THREADS = cores / ranks with mpirun's -x
    cpus = physical_cores()
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS",
                                                             "HVD_WORKER_THREADS")}
    shown = "echo $OMPI_COMM_WORLD_RANK:$OMP_NUM_THREADS"
    for np in (1, 2, 3):
        result = run(["--mpi", "-np", str(np), "sh", "-c", shown], env=env)
        assert result.returncode == 0, result.stderr.decode()
        assert sorted(result.stdout.decode().split()) == sorted(
            "[1,%d]<stdout>:%d:%d" % (r, r, max(1, cpus // np)) for r in range(np)), np
    dry = run(["--mpi", "--dry-run", "-np", "2", "true"], env=env)
    assert "-x OMP_NUM_THREADS=%d true\n" % max(1, cpus // 2) in dry.stdout.decode()
    # The user's own value wins; --worker-threads system sets nothing
    own = run(["--mpi", "-np", "2", "sh", "-c", shown], env=dict(env, OMP_NUM_THREADS="5"))
    assert sorted(own.stdout.decode().split()) == ["[1,0]<stdout>:0:5", "[1,1]<stdout>:1:5"]
    dry = run(["--mpi", "--dry-run", "-np", "2", "true"], env=dict(env, OMP_NUM_THREADS="5"))
    assert "OMP_NUM_THREADS" not in dry.stdout.decode()
    for args, extra in ((["--worker-threads", "system"], {}), ([], {"HVD_WORKER_THREADS": "system"})):
        unset = run(["--mpi"] + args + ["-np", "1", "sh", "-c", "echo \"[${OMP_NUM_THREADS-unset}]\""],
                    env=dict(env, **extra))
        assert unset.stdout.decode() == "[1,0]<stdout>:[unset]\n", (args, extra)


def test_sigint_stops_mpirun_and_its_ranks():
    import signal
    import time
    from hvdrun_harness import assert_no_survivors, kill_leftovers, start, unique_marker
    marker = unique_marker()
    proc = start(["--mpi", "-np", "2", "sh", "-c", "echo up; sleep 60; : " + marker])
    try:
        deadline = time.monotonic() + 30
        seen = 0
        while seen < 2 and time.monotonic() < deadline:
            if not proc.stdout.readline():
                break
            seen += 1
        assert seen == 2
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        assert_no_survivors(marker)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_leftovers(marker)
