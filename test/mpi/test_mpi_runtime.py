"""libhvd under Open MPI's mpirun, started by `hvdrun --mpi` (and by mpirun itself).

mpi-worker checks every collective against closed-form values and prints
"OK rank R size N local L/LS cross C/CS backend B" per rank.
"""
import os
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "launcher_e2e"))
from hvdrun_harness import assert_no_survivors, kill_leftovers, run, unique_marker  # noqa: E402

WORKER = os.environ.get("MPI_WORKER", "")
pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed")
OK_LINE = re.compile(r"^\[1,(\d+)\]<stdout>:OK rank (\d+) size (\d+) local (\d+)/(\d+) "
                     r"cross (\d+)/(\d+) backend (\S+)$")


def env_with(**extra):
    env = dict(os.environ)
    for name in list(env):
        if name.startswith(("HVD_", "HOROVOD_", "OMPI_")):
            del env[name]
    env.update(extra)
    return env


def ok_lines(stdout):
    found = [OK_LINE.match(line) for line in stdout.decode().splitlines()]
    return sorted((m for m in found if m), key=lambda m: int(m.group(2)))


def assert_four_ranks_ok(result, backend):
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0, out + err
    lines = ok_lines(result.stdout)
    assert len(lines) == 4, out + err
    for rank, m in enumerate(lines):
        # mpirun's tag, the runtime's rank (from OMPI_COMM_WORLD_*), one host
        assert m.group(1) == m.group(2) == str(rank), out
        assert m.groups()[2:] == ("4", str(rank), "4", "0", "1", backend), out


def test_hvdrun_mpi_four_ranks_on_the_mpi_backend():
    result = run(["--mpi", "-np", "4", WORKER], timeout=120, env=env_with())
    assert_four_ranks_ok(result, "MPI")


def test_hvdrun_mpi_four_ranks_with_gloo_data_under_the_mpi_controller():
    result = run(["--mpi", "-np", "4", WORKER, "--iterations", "2"], timeout=120,
                 env=env_with(HVD_CPU_OPERATIONS="gloo"))
    assert_four_ranks_ok(result, "MPI+GLOO")


def test_plain_mpirun_starts_the_runtime_too():
    cmd = ["mpirun", "--tag-output", "-np", "4", "-H", "localhost:4", WORKER]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    result = subprocess.run(cmd, capture_output=True, timeout=120, env=env_with())
    assert_four_ranks_ok(result, "MPI")


def test_gloo_controller_under_mpirun_is_a_clear_error():
    result = run(["--mpi", "-np", "2", WORKER], timeout=120,
                 env=env_with(HVD_CONTROLLER="gloo"))
    err = result.stderr.decode() + result.stdout.decode()
    assert result.returncode == 3, err
    assert "hvdrun's rendezvous is not available under mpirun" in err, err


def test_a_failing_rank_gives_its_exit_code_and_leaves_nothing():
    marker = unique_marker()
    try:
        result = run(["--mpi", "-np", "4", WORKER, "--fail-rank", "2", "--exit-code", "7",
                      "--iterations", "1000", "--marker", marker],
                     timeout=120, env=env_with())
        assert result.returncode == 7, result.stderr.decode()
        assert "failing on purpose with exit code 7" in result.stderr.decode()
        assert_no_survivors(marker)
    finally:
        kill_leftovers(marker)


def test_per_rank_variables_of_an_enclosing_job_do_not_reach_mpirun_ranks():
    # Given an environment that looks like a rank of another hvdrun job
    env = env_with(HVD_RANK="5", HVD_SIZE="9", HVD_RENDEZVOUS_ADDR="10.9.9.9", HVD_SECRET_FD="7",
                   HVD_FUSION_THRESHOLD="1234")
    # When hvdrun --mpi starts two ranks, Then they see Open MPI's topology, no rendezvous, no
    # key descriptor, and the knob is still forwarded
    result = run(["--mpi", "-np", "2", "sh", "-c",
                  'echo ${HVD_RANK:-none} ${HVD_RENDEZVOUS_ADDR:-none} ${HVD_SECRET_FD:-none} '
                  '$HVD_FUSION_THRESHOLD $OMPI_COMM_WORLD_RANK'], timeout=60, env=env)
    assert result.returncode == 0, result.stderr.decode()
    lines = sorted(result.stdout.decode().splitlines())
    assert lines == ["[1,0]<stdout>:none none none 1234 0",
                     "[1,1]<stdout>:none none none 1234 1"], lines


@pytest.mark.skipif(not os.path.isdir(os.path.join(os.environ.get("HVD_TEST_PYTHONPATH", ""),
                                                   "hvd")),
                    reason="the hvd Python package is not built (HVD_BUILD_PYTHON=OFF)")
def test_torch_training_example_under_hvdrun_mpi():
    # The Python binding dlopens libhvd, which must still initialize Open MPI (libmpi promoted
    # to RTLD_GLOBAL for Open MPI's plugins).
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "torch_train.py")
    env = env_with(PYTHONPATH=os.environ["HVD_TEST_PYTHONPATH"], OMP_NUM_THREADS="1")
    result = run(["--mpi", "-np", "2", "/usr/bin/python3", example, "--epochs", "1",
                  "--train-samples", "1024", "--test-samples", "256", "--min-accuracy", "0.4"],
                 timeout=240, env=env)
    out = result.stdout.decode()
    assert result.returncode == 0, out + result.stderr.decode()
    assert re.search(r"^\[1,0\]<stdout>:ranks 2  epoch 1  train loss", out, re.M), out


def test_ranks_of_another_mpis_launcher_fail_naming_it():
    # Given a rank as MPICH's or Intel MPI's mpirun (Hydra) starts it: PMI_* and MPI_LOCAL*, no
    # OMPI_COMM_WORLD_* (until 2026-12-01 these were not read: each rank ran alone as rank 0
    # of 1, silently)
    env = env_with(PMI_RANK="1", PMI_SIZE="2", MPI_LOCALRANKID="1", MPI_LOCALNRANKS="2")
    # When this libhvd (Open MPI's) starts, Then it reads the launcher's topology and fails
    # because its MPI_COMM_WORLD is not that job
    result = subprocess.run([WORKER, "--iterations", "1"], capture_output=True, timeout=60,
                            env=env)
    out = result.stdout.decode() + result.stderr.decode()
    assert result.returncode != 0, out
    assert "OK rank" not in out, out
    assert ("PMI_RANK/PMI_SIZE say rank 1 of 2, but MPI_COMM_WORLD has this process as rank 0 "
            "of 1: the ranks were started by an mpirun of another MPI than this libhvd's "
            "(Open MPI") in out, out


def test_a_program_that_returns_without_shutdown_exits_cleanly():
    # Given a C program that returns from main without hvd_shutdown: exit() ran MPI_Finalize
    # (atexit) while the runtime's thread still polled MPI, and MPI_ERRORS_ARE_FATAL aborted
    # the job (until 2026-12-01, 3 runs in 3)
    for _ in range(3):
        result = run(["--mpi", "-np", "2", WORKER, "--iterations", "2", "--no-shutdown"],
                     timeout=120, env=env_with())
        out = result.stdout.decode() + result.stderr.decode()
        assert result.returncode == 0, out
        assert len(ok_lines(result.stdout)) == 2, out


def test_a_collective_left_pending_stops_all_use_of_mpi():
    # Given a collective that times out pending (rank 1 stopped): MPI cannot cancel it, and any
    # later MPI call (MPI_Finalize at exit included) could finish it into memory freed since (a
    # 1 GB allreduce past its timeout crashed in MPI_Finalize, until 2026-12-01). Then hvd makes
    # no MPI call again: a new hvd_init fails naming it, and nothing dies of a signal.
    result = run(["--mpi", "-np", "2", WORKER, "--abandon"], timeout=120,
                 env=env_with(HVD_GLOO_TIMEOUT_SECONDS="1"))
    out = result.stdout.decode() + result.stderr.decode()
    assert 0 <= result.returncode < 128, out
    assert "ABANDONED OK rank 0" in out, out
    assert "MPI cannot be used again in this process: a collective was left pending" in out, out
    assert "not complete within the timeout (HVD_GLOO_TIMEOUT_SECONDS)" in out, out
