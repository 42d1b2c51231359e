"""hvdrun --mpi through the real Open MPI mpirun (label mpi)."""
import os
import shutil

import pytest

from hvdrun_harness import PYTHON, run

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
