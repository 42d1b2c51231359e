"""hvdrun across the two SSH hosts of scripts/cluster/up.sh 2 (network namespaces).

Each connection costs a few seconds here (the remote login shell's ~/.bashrc), so the tests
are few and every wait is bounded.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "launcher_e2e"))
from hvdrun_harness import (assert_no_survivors, cmdline, kill_leftovers,  # noqa
                            live_pids_with_marker, netns_pids, physical_cores,
                            python3_without_torch, run, start,
                            torn_timeline_rank, unique_marker, wait_for)

STATE = os.environ.get("HVD_CLUSTER_STATE", "/run/hvd-cluster")
KEY = os.path.join(STATE, "id_ed25519")
KNOWN_HOSTS = os.path.join(STATE, "known_hosts")
SSH = ["-i", KEY, "--ssh-known-hosts", KNOWN_HOSTS]
ADDRS = {"hvd-h1": "10.77.0.11", "hvd-h2": "10.77.0.12"}


# The cluster's own daemons in the host namespaces: the sshd listeners, and slurmd when the
# Slurm tests' fixture (slurm_up) is up at the same time (ctest -j; munged runs outside them).
DAEMONS = ("/usr/sbin/sshd", "/usr/sbin/slurmd")


def job_processes_on_hosts():
    """Everything in the host namespaces except the cluster's own daemons."""
    left = []
    for host in ADDRS:
        for pid in netns_pids(host):
            line = cmdline(pid)
            if line and "[listener]" not in line and not line.startswith(DAEMONS):
                left.append((host, pid, line))
    return left


def assert_hosts_clean(marker, timeout=15):
    assert_no_survivors(marker, timeout)
    wait_for(lambda: not job_processes_on_hosts(), timeout,
             "no job process in the host namespaces (%s)" % job_processes_on_hosts())


def test_four_ranks_on_two_hosts_print_prefixed_lines_from_the_right_hosts():
    result = run(SSH + ["-np", "4", "-H", "hvd-h1:2,hvd-h2:2", "sh", "-c",
                        "echo $HVD_RANK $(hostname -I) $HVD_RENDEZVOUS_ADDR"], timeout=60)
    out = result.stdout.decode()
    assert result.returncode == 0, result.stderr.decode()
    lines = sorted(out.splitlines())
    assert len(lines) == 4, out
    for rank, host in enumerate(["hvd-h1", "hvd-h1", "hvd-h2", "hvd-h2"]):
        assert lines[rank] == "[%d]<stdout>:%d %s 10.77.0.1" % (rank, rank, ADDRS[host]), out


def test_remote_ranks_get_hvdruns_environment_as_horovodrun_exports_it():
    # A variable of the user's and OMP_NUM_THREADS reach the remote rank as the local one; what
    # names this machine (HOSTNAME) and HOME (the SSH user's own login sets it) do not.
    env = dict(os.environ, MY_DATA_DIR="/data/x y", OMP_NUM_THREADS="3", HOSTNAME="launcher-box")
    result = run(SSH + ["-np", "2", "-H", "localhost:1,hvd-h1:1", "sh", "-c",
                        "echo \"$HVD_RANK [$MY_DATA_DIR] $OMP_NUM_THREADS $HOSTNAME\""],
                 timeout=60, env=env)
    assert result.returncode == 0, result.stderr.decode()
    lines = sorted(result.stdout.decode().splitlines())
    assert lines[0] == "[0]<stdout>:0 [/data/x y] 3 launcher-box", lines
    assert lines[1].startswith("[1]<stdout>:1 [/data/x y] 3 "), lines
    assert not lines[1].endswith("launcher-box"), lines
    # Without one, each host shares its cores among its ranks (HVD_WORKER_THREADS=share): hvdrun
    # computes its own host's, the agent the remote host's (the namespaces share the CPUs)
    env.pop("OMP_NUM_THREADS")
    cpus = physical_cores()
    shared = run(SSH + ["-np", "3", "-H", "localhost:1,hvd-h1:2", "sh", "-c",
                        "echo $HVD_RANK $OMP_NUM_THREADS"], timeout=60, env=env)
    assert shared.returncode == 0, shared.stderr.decode()
    assert sorted(shared.stdout.decode().splitlines()) == [
        "[0]<stdout>:0 %d" % cpus, "[1]<stdout>:1 %d" % max(1, cpus // 2),
        "[2]<stdout>:2 %d" % max(1, cpus // 2)], shared.stdout.decode()


def test_remote_failure_propagates_its_code_and_leaves_nothing_anywhere():
    marker = unique_marker()
    script = ('if [ "$HVD_RANK" = 3 ]; then echo bad >&2; exit 3; fi; '
              'sleep 60; : ' + marker)
    begin = time.monotonic()
    try:
        result = run(SSH + ["-np", "4", "-H", "localhost:1,hvd-h1:1,hvd-h2:2",
                            "--grace-period-seconds", "2", "sh", "-c", script], timeout=60)
        assert result.returncode == 3, result.stderr.decode()
        err = result.stderr.decode()
        assert "rank 3 on hvd-h2 failed first: exit code 3" in err, err
        assert time.monotonic() - begin < 40
        assert_hosts_clean(marker)
    finally:
        kill_leftovers(marker)


# Rank 2 stops its hvd-agent (1.5 s, then a helper continues it) and SIGKILLs itself, so the
# news of its death reaches hvdrun well after its peers', which fail on losing it and exit 1.
LOST_RANK = """
import os, signal, subprocess, sys
import numpy as np
import hvd.numpy as hvd
hvd.init()
for i in range(100000):
    if i == 20 and hvd.rank() == 2:
        agent = os.getppid()
        while not open("/proc/%d/comm" % agent).read().startswith("hvd-agent"):
            agent = int(open("/proc/%d/stat" % agent).read().rsplit(")", 1)[1].split()[1])
        subprocess.Popen(["sh", "-c", "sleep 1.5; kill -CONT %d; : %s" % (agent, sys.argv[1])],
                         start_new_session=True)
        os.kill(agent, signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGKILL)
    hvd.allreduce(np.full((1000,), float(i)), name="t")
"""


def test_a_killed_remote_rank_is_named_first_though_its_peers_exits_arrive_first(tmp_path):
    # Given 3 ranks on 3 hosts, where rank 2 on hvd-h2 is SIGKILLed and its agent tells hvdrun
    # only after ranks 0 and 1 have failed on its loss and exited
    marker = unique_marker()
    script = tmp_path / "rank.py"
    script.write_text(LOST_RANK)
    env = dict(os.environ, PYTHONPATH=os.environ.get("HVD_TEST_PYTHONPATH", ""))
    try:
        result = run(SSH + ["-np", "3", "-H", "localhost:1,hvd-h1:1,hvd-h2:1",
                            "--grace-period-seconds", "10", "/usr/bin/python3", str(script),
                            marker], timeout=120, env=env)
        # Then hvdrun names rank 2 (the peers told it whom they lost), with rank 2's code
        err = result.stderr.decode(errors="replace")
        assert result.returncode == 128 + signal.SIGKILL, err
        assert re.search(r"rank 2 on hvd-h2 failed first: SIGKILL \(signal 9\) \(its peers failed "
                         r"on its death; rank [01], failed by that, exited first: exit code 1\)",
                         err), err
        assert_hosts_clean(marker)
    finally:
        kill_leftovers(marker)


def test_remote_ranks_without_torch_are_told_what_to_check_on_their_host(tmp_path):
    # Given a python3 first on PATH that is not Debian's, which hvdrun passes on to the remote
    # host
    shim, env = python3_without_torch(tmp_path)
    # When a torch script runs there
    result = run(SSH + ["-np", "2", "-H", "hvd-h1:2", "python3", "-c", "import torch"],
                 timeout=60, env=env)
    # Then the hint names the host, what its ranks ran and what to check there (hvdrun sees
    # neither that host's PATH nor its packages)
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert re.search(
        r"^hint: (rank 0|rank 1|ranks 0, 1) on hvd-h1: " + re.escape(
            "No module named 'torch'. The ranks there run `python3` as hvdrun's PATH (passed "
            "on) finds it on hvd-h1 (here: %s), with that host's packages: check on hvd-h1 with "
            "command -v python3 and python3 -c 'import torch'" % shim), err, re.M), err


def test_sigint_stops_every_rank_on_every_host_and_exits_130():
    marker = unique_marker()
    proc = start(SSH + ["-np", "3", "-H", "localhost:1,hvd-h1:1,hvd-h2:1", "sh", "-c",
                        "echo up; sleep 60; : " + marker])
    try:
        lines = []
        deadline = time.monotonic() + 40
        while len(lines) < 3 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
        assert len(lines) == 3, lines
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        assert proc.returncode == 130, proc.stderr.read().decode()
        assert_hosts_clean(marker)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_leftovers(marker)


def wrong_key_known_hosts(tmp_path):
    key = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    pub = (tmp_path / "other.pub").read_text().split()
    known = tmp_path / "known_hosts"
    known.write_text("hvd-h1 %s %s\n" % (pub[0], pub[1]))
    return str(known)


def test_connection_problems_name_the_host_and_are_bounded(tmp_path):
    flag = tmp_path / "ran"
    cases = [
        (["-i", KEY, "--ssh-known-hosts", wrong_key_known_hosts(tmp_path),
          "-H", "hvd-h1:1"], "hvd-h1", "host key", "HOST KEY"),
        (SSH + ["-H", "10.77.0.99:1"], "10.77.0.99", "timeout", "no answer"),
        (["-i", str(tmp_path / "missing_key"), "--ssh-known-hosts", KNOWN_HOSTS,
          "-H", "hvd-h1:1"], "hvd-h1", "auth", "missing_key"),
        (SSH + ["-p", "2222", "-H", "hvd-h2:1"], "hvd-h2", "refused", "refused"),
    ]
    for args, host, reason, why in cases:
        begin = time.monotonic()
        result = run(args + ["--start-timeout", "3", "touch", str(flag)], timeout=30)
        err = result.stderr.decode()
        assert result.returncode == 69, (args, err)
        # One line: the host, the reason, then the error itself
        assert "\n  %s: %s: " % (host, reason) in err and why in err, (args, err)
        assert time.monotonic() - begin < 15, (args, err)
        assert not flag.exists()


def test_check_prints_a_table_and_names_the_failing_host():
    good = run(SSH + ["--check", "--start-timeout", "20", "-H", "localhost:1,hvd-h1:1,hvd-h2:1"],
               timeout=60)
    out = good.stdout.decode()
    assert good.returncode == 0, out + good.stderr.decode()
    assert "all 3 hosts OK" in out and "hvd-agent 0.1.0" in out and "hvd-br0" in out, out
    # --start-timeout 8: the unreachable host fails at it, and the reachable one's probe (an ssh
    # session starting hvd-agent) has room beside another test; at 3 s it ran out once under
    # ctest -j2 ("timed out during running ... --probe").
    bad = run(SSH + ["--check", "--start-timeout", "8", "-H", "hvd-h1:1,10.77.0.99:1"],
              timeout=30)
    assert bad.returncode == 69
    assert "FAILED: 10.77.0.99" in bad.stdout.decode(), bad.stdout.decode()
    # The remote half: each host checks the interface the ranks would bind there and that it
    # reaches hvdrun's address. hvd-br0 exists only on this machine (the job would fail on
    # every rank: "HVD_GLOO_IFACE 'hvd-br0': no such interface"); through eth0 (this
    # machine's own uplink, not the cluster's bridge) the hosts cannot reach hvdrun.
    # --start-timeout 20 under a 60 s subprocess limit: a host slow to answer under ctest -j2
    # (once past the default 30 s, which equalled the subprocess limit) shows in hvdrun's own
    # table, naming the step that was slow, instead of as a bare TimeoutExpired.
    iface = run(SSH + ["--check", "--start-timeout", "20", "-H", "hvd-h1:1,hvd-h2:1",
                       "--network-interface", "hvd-br0"], timeout=60)
    out = iface.stdout.decode()
    assert iface.returncode == 69, out
    assert "error: network interface 'hvd-br0' does not exist here" in out and \
        "(on hvd-h1)" in out and "(on hvd-h2)" in out, out
    assert "FAILED: hvd-h1, hvd-h2" in out, out
    if any(line.split(":")[0].strip() == "eth0" for line in open("/proc/net/dev")):
        unreachable = run(SSH + ["--check", "--start-timeout", "20", "-H", "localhost:1,hvd-h1:1",
                                 "--network-interface", "eth0"], timeout=60)
        out = unreachable.stdout.decode()
        assert unreachable.returncode == 69, out
        assert re.search(r"hvd-h1 .* error: connecting to \S+ (failed|timed out).* \(from hvd-h1\) +FAILED",
                         out), out


def test_dry_run_shows_the_remote_command_without_secrets():
    result = run(SSH + ["--dry-run", "-np", "2", "-H", "localhost:1,hvd-h1:1", "true"])
    out = result.stdout.decode()
    assert result.returncode == 0
    assert "host hvd-h1 (ssh" in out and "remote command: exec '" in out, out
    assert "hvd-agent'" in out, out


def test_lost_connection_is_named_and_the_remote_rank_is_killed():
    marker = unique_marker()
    proc = start(SSH + ["-np", "2", "-H", "hvd-h1:1,hvd-h2:1", "--grace-period-seconds", "1",
                        "sh", "-c", "echo up; sleep 60; : " + marker])
    try:
        seen = 0
        deadline = time.monotonic() + 40
        while seen < 2 and time.monotonic() < deadline:
            if not proc.stdout.readline():
                break
            seen += 1
        assert seen == 2
        sessions = [p for p in netns_pids("hvd-h2")
                    if cmdline(p).startswith("sshd: ") and "[listener]" not in cmdline(p)]
        assert sessions, [cmdline(p) for p in netns_pids("hvd-h2")]
        for pid in sessions:
            os.kill(pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == 255
        err = proc.stderr.read().decode()
        assert "connection to root@hvd-h2:22 lost" in err, err
        assert_hosts_clean(marker)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_leftovers(marker)


def agents_on(host):
    return [pid for pid in netns_pids(host) if "hvd-agent" in cmdline(pid)]


def read_lines(stream, count, timeout):
    lines = []
    deadline = time.monotonic() + timeout
    while len(lines) < count and time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        lines.append(line.decode())
    return lines


def test_one_agent_per_host_runs_every_rank_of_that_host(tmp_path):
    # Given 8 ranks, 4 on each host, each printing its rank and host address
    marker = unique_marker()
    logs = tmp_path / "logs"
    proc = start(SSH + ["-np", "8", "-H", "hvd-h1:4,hvd-h2:4", "--output-filename", str(logs),
                        "sh", "-c",
                        'echo "$HVD_RANK $(hostname -I)"; sleep 60; : ' + marker])
    try:
        lines = read_lines(proc.stdout, 8, 40)
        # Then every rank's line arrives, prefixed, from its planned host
        assert sorted(lines) == sorted("[%d]<stdout>:%d %s \n" % (r, r, ADDRS["hvd-h%d" % (1 + r // 4)])
                                       for r in range(8)), lines
        # And each host runs exactly one hvd-agent, over one SSH session
        for host in ADDRS:
            assert len(agents_on(host)) == 1, [cmdline(p) for p in netns_pids(host)]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        assert_hosts_clean(marker)
        # --output-filename got each remote rank's raw output
        for r in range(8):
            assert (logs / ("rank.%d" % r) / "stdout").read_text() == \
                "%d %s \n" % (r, ADDRS["hvd-h%d" % (1 + r // 4)])
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_leftovers(marker)


def test_sigkill_of_hvdrun_leaves_nothing_on_any_host():
    marker = unique_marker()
    proc = start(SSH + ["-np", "4", "-H", "localhost:1,hvd-h1:1,hvd-h2:2", "sh", "-c",
                        "echo up; sleep 60; : " + marker])
    try:
        assert len(read_lines(proc.stdout, 4, 40)) == 4
        proc.kill()
        proc.wait(timeout=10)
        # The kernel closes hvdrun's SSH connections; each agent sees the end of its stdin
        # and stops its ranks (SIGTERM, SIGKILL after the grace period).
        assert_hosts_clean(marker, timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_leftovers(marker)


def test_unreachable_host_among_reachable_ones_starts_nothing_anywhere(tmp_path):
    flag = tmp_path / "ran"
    begin = time.monotonic()
    # --start-timeout 8, not 3: the reachable hosts must not be blamed, also beside another test
    # (ctest -j2; see test_check_prints_a_table_and_names_the_failing_host).
    result = run(SSH + ["-np", "3", "-H", "hvd-h1:1,10.77.0.99:1,hvd-h2:1", "--start-timeout", "8",
                        "sh", "-c", "touch %s; sleep 30" % flag], timeout=30)
    err = result.stderr.decode()
    assert result.returncode == 69, err
    assert "cannot reach 1 of 3 remote hosts; nothing was started:" in err, err
    # One line names the host and its reason; the reachable hosts are not blamed. The reason is
    # "timeout" or, when the bridge's ARP gives up first (about 3 s), "unreachable" (No route
    # to host).
    assert re.search(r"\n  10\.77\.0\.99: (timeout|unreachable): ssh to root@10\.77\.0\.99:22",
                     err), err
    assert "hvd-h1:" not in err and "hvd-h2:" not in err, err
    assert time.monotonic() - begin < 20
    assert not flag.exists()
    wait_for(lambda: not job_processes_on_hosts(), 10, "agents on the reachable hosts to end")


def test_the_agent_repairs_a_timeline_its_killed_rank_tore(tmp_path):
    # Given rank 0 on a remote host that leaves its timeline (relative to the job's directory)
    # torn mid-growth and is SIGKILLed there
    args = ["-np", "2", "-H", "hvd-h1:2", "--timeline-filename", "trace.json"]
    proc = subprocess.run([os.environ["HVDRUN"]] + SSH + args + torn_timeline_rank(tmp_path),
                          cwd=tmp_path, capture_output=True, timeout=120)
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 128 + signal.SIGKILL, err
    # Then that host's hvd-agent repaired it once its ranks had ended, and said so
    with open(tmp_path / "trace.json") as f:
        assert [e["name"] for e in json.load(f)] == ["process_name"]
    assert "hvd-agent: repaired timeline '%s'" % (tmp_path / "trace.json") in err, err


def test_sigquit_asks_the_remote_ranks_for_their_stacks_through_their_agents(tmp_path):
    # Each rank's Python (hvd imported: it registers the dump on HVD_STACK_SIGNAL) runs under a
    # shell that does not exec it; hvd-agent must send the signal to the Python only.
    marker = unique_marker()
    go = tmp_path / "go"
    script = tmp_path / "rank.py"
    script.write_text(
        "import os, sys, time\n"
        "import hvd.basics\n"
        "def where_the_rank_waits():\n"
        "    open(sys.argv[1] + '.up.' + os.environ['HVD_RANK'], 'w').close()\n"
        "    while not os.path.exists(sys.argv[1]):\n"
        "        time.sleep(0.02)\n"
        "where_the_rank_waits()\n")
    env = dict(os.environ, PYTHONPATH=os.environ.get("HVD_TEST_PYTHONPATH", ""))
    out_path, err_path = tmp_path / "out", tmp_path / "err"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen(
            [os.environ["HVDRUN"]] + SSH + ["-np", "3", "-H", "localhost:1,hvd-h1:1,hvd-h2:1",
                                            "sh", "-c", "/usr/bin/python3 %s %s; echo shell "
                                            "$HVD_RANK after; : %s" % (script, go, marker)],
            stdout=out, stderr=err, env=env)
    try:
        wait_for(lambda: all(os.path.exists("%s.up.%d" % (go, r)) for r in range(3)), 60,
                 "every rank to start")
        proc.send_signal(signal.SIGQUIT)
        wait_for(lambda: all(re.search(r"^\[%d\]<stderr>:.* in where_the_rank_waits$" % r,
                                       err_path.read_text(), re.M) for r in range(3)), 30,
                 "every rank's stack")
    finally:
        go.touch()
        try:
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
            kill_leftovers(marker)
    out, err = out_path.read_text(), err_path.read_text()
    assert proc.returncode == 0, err
    assert sorted(l for l in out.splitlines() if "after" in l) == [
        "[%d]<stdout>:shell %d after" % (r, r) for r in range(3)], out + err
    assert "asking ranks 0, 1, 2 for their Python stacks (hvdrun received SIGQUIT)" in err, err
    assert_hosts_clean(marker)
