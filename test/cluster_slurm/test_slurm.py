"""hvdrun inside a real Slurm allocation on the namespace cluster (scripts/cluster/up.sh 2 +
scripts/cluster/slurm-up.sh): one srun step per node runs that node's hvd-agent, which starts
the node's ranks.

salloc and sbatch run from this machine (the bridge address); the nodes are told apart by
SLURMD_NODENAME, since every namespace shares one kernel host name. Every wait is bounded.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "launcher_e2e"))
from hvdrun_harness import (HVDRUN, assert_no_survivors, cmdline, kill_leftovers,  # noqa: E402
                            live_pids_with_marker, unique_marker, wait_for)

STATE = os.environ.get("HVD_CLUSTER_STATE", "/run/hvd-cluster")
SLURM_CONF = os.path.join(STATE, "slurm", "slurm.conf")
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOSTS = ["hvd-h1", "hvd-h2"]
SALLOC = ["salloc", "--quiet", "-N2", "-n4", "--ntasks-per-node=2"]


def slurm_env(**extra):
    env = dict(os.environ, SLURM_CONF=SLURM_CONF)
    env.update(extra)
    return env


def salloc(args, timeout=90, **extra_env):
    """salloc -N2 -n4 hvdrun <args>; CompletedProcess with text output."""
    return subprocess.run(SALLOC + [HVDRUN] + list(args), capture_output=True, text=True,
                          timeout=timeout, env=slurm_env(**extra_env))


def job_steps():
    out = subprocess.run(["squeue", "-h", "-s", "-o", "%i %j"], capture_output=True, text=True,
                         timeout=20, env=slurm_env()).stdout
    return [line for line in out.splitlines() if line.strip()]


def node_job_processes():
    """Processes in the host namespaces other than sshd and slurmd."""
    left = []
    for host in HOSTS:
        out = subprocess.run(["ip", "netns", "pids", host], capture_output=True, text=True)
        for pid in (int(p) for p in out.stdout.split()):
            line = cmdline(pid)
            if line and not line.startswith(("/usr/sbin/sshd", "sshd:", "/usr/sbin/slurmd")):
                left.append((host, pid, line))
    return left


def assert_nothing_left(marker, timeout=20):
    assert_no_survivors(marker, timeout)
    wait_for(lambda: not node_job_processes(), timeout,
             "no job process on any node (%s)" % node_job_processes())


def rank_lines(stdout):
    return sorted(line for line in stdout.splitlines() if line.startswith("["))


@pytest.fixture(autouse=True)
def require_slurm():
    if not os.path.exists(SLURM_CONF):
        pytest.fail("%s missing: the slurm_up fixture did not run" % SLURM_CONF)


def test_srun_runs_on_both_nodes():
    # Given the Slurm cluster, srun -N2 reaches both namespace nodes.
    result = subprocess.run(["srun", "-N2", "-n2", "printenv", "SLURMD_NODENAME"],
                            capture_output=True, text=True, timeout=60, env=slurm_env())
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == HOSTS


def test_hvdrun_without_hosts_plans_from_slurm_and_starts_ranks_with_srun():
    # When hvdrun runs with no -np/-H inside salloc -N2 -n4,
    result = salloc(["--verbose", "sh", "-c",
                     'echo "$HVD_RANK/$HVD_SIZE $HVD_LOCAL_RANK $HVD_HOSTNAME $SLURMD_NODENAME"'])
    # then four ranks ran, two per node, each on the node its plan names, output prefixed.
    assert result.returncode == 0, result.stderr
    assert rank_lines(result.stdout) == [
        "[0]<stdout>:0/4 0 hvd-h1 hvd-h1", "[1]<stdout>:1/4 1 hvd-h1 hvd-h1",
        "[2]<stdout>:2/4 0 hvd-h2 hvd-h2", "[3]<stdout>:3/4 1 hvd-h2 hvd-h2"], result.stdout
    assert "hosts from Slurm allocation (SLURM_JOB_NODELIST=hvd-h[1-2])" in result.stderr
    assert "--nodelist=hvd-h2 --overlap --job-name=hvd-agent" in result.stderr, result.stderr
    assert "hvd-agent running on 2 nodes" in result.stderr, result.stderr


def test_job_key_and_rank_environment_are_not_on_srun_command_lines():
    # While a job runs, no srun or agent command line carries HVD_* variables or the key.
    marker = unique_marker()
    # The allocation is named after the marker: salloc is killed below, so it cannot give the
    # allocation back itself (InactiveLimit=0: Slurm never reclaims it), and scancel does.
    proc = subprocess.Popen(SALLOC + ["--job-name", marker, HVDRUN, "sh", "-c",
                                      "sleep 30; : " + marker],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=slurm_env())
    try:
        # The ranks themselves (the marker is on hvdrun's, salloc's and srun's lines too).
        wait_for(lambda: len([pid for pid in live_pids_with_marker(marker)
                              if cmdline(pid).startswith("sh -c sleep 30")]) >= 4, 60,
                 "4 ranks running")
        # One step per node, each running one agent for the node's two ranks.
        steps = [step for step in job_steps() if step.endswith(" hvd-agent")]
        assert len(steps) == 2, job_steps()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            line = cmdline(int(entry))
            if "srun" in line or "hvd-agent" in line:
                assert "HVD_" not in line and "SECRET" not in line, line
    finally:
        proc.kill()
        # The ranks' sleeps first: they hold salloc's pipes open, so reading them to the end
        # would wait out the sleep (30 s of the test's 31 before 2026-11-29).
        kill_leftovers(marker)
        proc.communicate(timeout=60)
        subprocess.run(["scancel", "--name", marker], timeout=20, env=slurm_env())
    assert_nothing_left(marker)
    wait_for(lambda: not job_steps(), 30, "no Slurm job left (%s)" % job_steps())


def test_four_rank_allreduce_across_nodes():
    script = ("import torch, hvd.torch as hvd; hvd.init(); "
              "t = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum); "
              "print('sum', int(t.item()), hvd.size())")
    result = salloc(["/usr/bin/python3", "-c", script], timeout=120)
    assert result.returncode == 0, result.stderr
    assert rank_lines(result.stdout) == ["[%d]<stdout>:sum 10 4" % r for r in range(4)], \
        result.stdout + result.stderr


def test_torch_training_example_across_nodes(tmp_path):
    result = salloc(["/usr/bin/python3", os.path.join(REPO, "examples", "torch_train.py"),
                     "--epochs", "1", "--train-samples", "512", "--test-samples", "256"],
                    timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "[0]<stdout>:" in result.stdout


def test_sbatch_of_the_configs_script_runs_every_rank(tmp_path):
    out = tmp_path / "job.out"
    result = subprocess.run(
        ["sbatch", "--wait", "--quiet", "--output", str(out), "-N2", "--ntasks-per-node=2",
         os.path.join(REPO, "configs", "slurm_job.sh"), "sh", "-c",
         'echo "$HVD_RANK $SLURMD_NODENAME"'],
        capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
        env=slurm_env(HVDRUN=HVDRUN))
    text = out.read_text() if out.exists() else ""
    assert result.returncode == 0, result.stderr + text
    assert rank_lines(text) == ["[0]<stdout>:0 hvd-h1", "[1]<stdout>:1 hvd-h1",
                                "[2]<stdout>:2 hvd-h2", "[3]<stdout>:3 hvd-h2"], text


def test_output_filename_writes_remote_ranks_raw_output(tmp_path):
    out_dir = tmp_path / "logs"
    result = salloc(["--output-filename", str(out_dir), "sh", "-c",
                     'echo out $HVD_RANK; echo err $HVD_RANK >&2'])
    assert result.returncode == 0, result.stderr
    for rank in range(4):
        assert (out_dir / ("rank.%d" % rank) / "stdout").read_text() == "out %d\n" % rank
        assert (out_dir / ("rank.%d" % rank) / "stderr").read_text() == "err %d\n" % rank
    assert "[3]<stderr>:err 3" in result.stderr


def test_failing_remote_rank_ends_the_job_with_its_code_and_leaves_nothing():
    marker = unique_marker()
    script = 'if [ "$HVD_RANK" = 3 ]; then echo bad >&2; exit 3; fi; sleep 60; : ' + marker
    begin = time.monotonic()
    try:
        result = salloc(["--grace-period-seconds", "2", "sh", "-c", script])
        assert result.returncode == 3, result.stderr
        assert "rank 3 on hvd-h2 failed first: exit code 3" in result.stderr, result.stderr
        assert "[3]<stderr>:bad" in result.stderr
        assert time.monotonic() - begin < 45
        assert_nothing_left(marker)
        wait_for(lambda: not job_steps(), 20, "no Slurm step left (%s)" % job_steps())
    finally:
        kill_leftovers(marker)


def hvdrun_pid(marker):
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            line = cmdline(int(entry))
            if line.startswith(HVDRUN + " ") and marker in line:
                return int(entry)
    return None


def allocations():
    out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True,
                         timeout=20, env=slurm_env()).stdout
    return out.split()


@pytest.mark.parametrize("signo,code", [(signal.SIGTERM, 143), (signal.SIGKILL, 137)])
def test_signal_to_hvdrun_leaves_no_process_on_any_node(signo, code, tmp_path):
    # Given a running 4-rank job inside an allocation that outlives hvdrun (so Slurm's own
    # cleanup at the end of the allocation cannot be what stops the ranks),
    marker = unique_marker()
    status_file = tmp_path / "hvdrun.status"
    # The marker reaches only hvdrun's and the ranks' argv (through RANK_SCRIPT), not the
    # command lines of salloc and of the shell that stays.
    # (written aside and renamed: `echo $? > file` creates the file empty before it writes, and
    # a poll of its existence could read it in between: seen once in CI, '' for 143)
    inner = ('"$0" --grace-period-seconds 2 sh -c "$RANK_SCRIPT"; echo $? > %s.tmp; '
             'mv %s.tmp %s; sleep 120' % (status_file, status_file, status_file))
    proc = subprocess.Popen(SALLOC + ["sh", "-c", inner, HVDRUN], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            env=slurm_env(RANK_SCRIPT="sleep 60; : " + marker))
    try:
        wait_for(lambda: len(live_pids_with_marker(marker)) >= 4, 60, "4 ranks running")
        pid = hvdrun_pid(marker)
        assert pid is not None
        # When hvdrun gets the signal (SIGKILL: it cannot clean up itself),
        os.kill(pid, signo)
        wait_for(status_file.exists, 30, "hvdrun to end")
        # then it ends with 128+signal, and while the allocation still exists nothing of the
        # job is left on any node: srun's stdin closed with hvdrun and the agents stopped
        # their ranks.
        assert status_file.read_text().strip() == str(code)
        assert_nothing_left(marker, timeout=30)
        wait_for(lambda: not job_steps(), 30, "no Slurm step left (%s)" % job_steps())
        assert allocations(), "the allocation ended early; the test proves nothing"
    finally:
        # salloc, then the shell salloc started (its own process group) and its sleep; the
        # allocation ends with salloc.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        for pid in live_pids_with_marker(str(status_file)):
            try:
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            except OSError:
                pass
        kill_leftovers(marker)
        subprocess.run(["scancel", "--user=root"], timeout=20, env=slurm_env())


def test_node_cut_off_mid_job_is_named_and_leaves_nothing(tmp_path):
    # Given a running 4-rank job, two ranks per node
    marker = unique_marker()
    proc = subprocess.Popen(SALLOC + [HVDRUN, "--grace-period-seconds", "2", "sh", "-c",
                                      "echo up; sleep 60; : " + marker],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=slurm_env())
    cut = None
    # The ranks themselves: the marker is also on hvdrun's, salloc's, srun's and the agents'
    # command lines, and counting those let the link go down while hvd-h2's agent was still
    # starting (hvdrun then rightly said "nothing was started", exit 69: seen under ctest -j2).
    ranks = lambda: [pid for pid in live_pids_with_marker(marker)  # noqa: E731
                     if cmdline(pid).startswith("sh -c echo up; sleep 60")]
    try:
        wait_for(lambda: len(ranks()) >= 4, 60, "4 ranks running")
        # When hvd-h2's link goes down (its step's agent stops answering)
        cut = time.monotonic()
        subprocess.run(["ip", "link", "set", "hvd-v2", "down"], check=True)
        out, err = proc.communicate(timeout=90)
        # Then hvdrun names the lost node within the heartbeat timeout and fails the job
        assert proc.returncode == 255, err
        assert "host hvd-h2 lost: no sign of life from its hvd-agent" in err, err
        assert "rank 2 on hvd-h2 failed first" in err, err
    finally:
        if cut is not None:
            subprocess.run(["ip", "link", "set", "hvd-v2", "up"], check=True)
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
    try:
        # And once the link is back nothing is left: the cut-off agent stopped its ranks
        assert_nothing_left(marker, timeout=60)
        wait_for(lambda: not job_steps(), 60, "no Slurm step left (%s)" % job_steps())
    finally:
        kill_leftovers(marker)


# ---- elastic jobs inside the allocation ---------------------------------------------------
sys.path.insert(0, os.path.join(REPO, "test", "elastic_e2e"))
import elastic_harness  # noqa: E402

TRAIN = elastic_harness.TRAIN


def elastic_salloc(tmp_path, args, worker_args, timeout=300):
    """salloc -N2 -n4 hvdrun --verbose <args> python3 elastic_train.py ...: a Run."""
    logfile, events = tmp_path / "log.jsonl", tmp_path / "events.jsonl"
    marker = "hvd-slurm-elastic-%d-%s" % (os.getpid(), tmp_path.name)
    cmd = (SALLOC + [HVDRUN, "--verbose"] + list(args) +
           ["/usr/bin/python3", TRAIN, "--logfile", str(logfile), "--events", str(events)] +
           list(worker_args))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=slurm_env(OMP_NUM_THREADS="1", HVD_ELASTIC_TEST_MARKER=marker))
    finally:
        elastic_harness.kill_marked(marker)

    class Done:  # what elastic_harness.Run reads
        returncode = proc.returncode

    run = elastic_harness.Run(Done, proc.stdout, proc.stderr, str(logfile), str(events))
    return run, marker


def test_elastic_job_drops_a_failed_node_and_goes_on_within_the_allocation(tmp_path):
    # Given an elastic job on both nodes of the allocation (hosts from SLURM_JOB_NODELIST, two
    # workers per node, each node's agent started by a srun step),
    # when the worker with start rank 3 (on hvd-h2) fails at epoch 1,
    run, marker = elastic_salloc(tmp_path, ["--elastic", "-np", "4", "--min-np", "2"],
                                 ["--epochs", "3", "--exit-schedule", '{"1,0": [3]}'])
    # then hvd-h2 is blacklisted and the two workers on hvd-h1 finish the job, resuming from
    # exactly the committed state; no agent went over SSH.
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [4, 2, 2], run.describe()
    assert "Inside Slurm job" in run.err and "--nodelist=hvd-h2 --overlap" in run.err, run.err
    assert "host hvd-h2 is blacklisted" in run.err, run.err
    elastic_harness.assert_state_recovered(run)
    wait_for(lambda: not elastic_harness.live_marked(marker), 20, "no worker left")
    wait_for(lambda: not node_job_processes(), 20,
             "no job process on any node (%s)" % node_job_processes())
    wait_for(lambda: not job_steps(), 30, "no Slurm step left (%s)" % job_steps())


def test_elastic_discovery_of_a_host_outside_the_allocation_is_refused(tmp_path):
    # Given an elastic job on the allocation's nodes whose discovery script, after the first
    # epoch, also lists a host that is not a node of the allocation,
    script = elastic_harness.discovery_script(
        tmp_path / "discover.sh", tmp_path / "log.jsonl",
        [(0, ["hvd-h1:2", "hvd-h2:1"]), (None, ["hvd-h1:2", "hvd-h2:1", "hvd-elsewhere:1"])])
    run, marker = elastic_salloc(
        tmp_path, ["-np", "3", "--min-np", "3", "--max-np", "4", "--host-discovery-script",
                   script], ["--epochs", "2", "--wait-for-update-after", "0",
                             "--update-wait", "8"])
    # then no worker starts there (the reason names the host and the job), and the job trains
    # on the allocation's nodes.
    assert run.returncode == 0, run.describe()
    assert "host hvd-elsewhere is not a node of Slurm job" in run.err, run.err
    assert set(run.sizes()) == {3}, run.describe()
    wait_for(lambda: not job_steps(), 30, "no Slurm step left (%s)" % job_steps())


sys.path.insert(0, os.path.join(REPO, "test", "cluster_e2e"))
from elastic_fault_job import FaultJob, link  # noqa: E402


def test_elastic_node_cut_off_rejoins_through_a_new_srun_step(tmp_path):
    # Given an elastic job on both nodes of salloc -N2 (hosts from the allocation, no discovery
    # script, each node's agent a srun step), when hvd-h2's link is cut and restored,
    job = FaultJob(tmp_path, ["--elastic", "-np", "4", "--min-np", "2",
                              "--blacklist-cooldown-range", "3", "4", "--start-timeout", "30"],
                   prefix=SALLOC, env={"SLURM_CONF": SLURM_CONF}, ssh=False)
    try:
        job.wait_for_size(4, timeout=90)
        cut = time.time()
        link("hvd-h2", "down")
        job.wait_for_size(2, after=cut, steps=1)
        restored = time.time()
        link("hvd-h2", "up")
        # then the survivors go on at 2, and after its cooldown the node is back at 4 through a
        # new srun step.
        job.wait_for_size(4, after=restored)
        assert job.finish() == 0, job.describe()
    finally:
        link("hvd-h2", "up")
        job.close()
    assert job.sizes() == [4, 2, 4], job.describe()
    assert "host hvd-h2 lost" in job.err, job.describe()
    assert job.err.count("--nodelist=hvd-h2 --overlap") == 2, job.describe()
    job.assert_resumed_from_last_commit()
    job.assert_nothing_left()
    wait_for(lambda: not job_steps(), 30, "no Slurm step left (%s)" % job_steps())
