"""One elastic job of the host-fault tests, driven phase by phase: hvdrun runs
elastic_fault_worker.py with a discovery script that prints a hosts file the test rewrites;
the test changes the hosts (cut a link, kill processes in a host's namespace, list or drop a
host) and waits, bounded, for what the workers log. The checks every scenario shares are here:
the sizes the job went through, that each new round resumed from exactly the state its rank 0
last committed (no committed step lost, none repeated), and that nothing is left on any host.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "elastic_e2e"))
from elastic_harness import kill_marked, live_marked  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "launcher_e2e"))
from hvdrun_harness import cmdline, netns_pids  # noqa: E402

HVDRUN = os.environ.get("HVDRUN", "")
PYTHON = "/usr/bin/python3"
WORKER = os.path.join(HERE, "elastic_fault_worker.py")
STATE = os.environ.get("HVD_CLUSTER_STATE", "/run/hvd-cluster")
SSH = ["-i", os.path.join(STATE, "id_ed25519"), "--ssh-known-hosts",
       os.path.join(STATE, "known_hosts")]
HOSTS = ("hvd-h1", "hvd-h2")
# Short settings so a scenario takes seconds: hvdrun and the workers declare a silent peer
# dead after 2 s, a failed host may come back after 1-2 s, discovery runs every 0.2 s. The
# start timeout stays long: a round waits for every new worker that is alive only until they
# are all ready (a second or two), but a loaded 2-core machine once took over 8 s to start a
# host's workers (ssh, agent, python, torch), and the first round formed without them.
FAST = ["--blacklist-cooldown-range", "1", "2", "--host-discovery-interval", "0.2",
        "--start-timeout", "30"]
FAST_ENV = {"HVD_HEARTBEAT_TIMEOUT_SECONDS": "2", "HVD_HOST_DISCOVERY_TIMEOUT": "1"}


def read_json_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n") and line.strip()]


def job_processes(hosts=HOSTS):
    """What runs in the hosts' namespaces besides the cluster's own daemons."""
    left = []
    for host in hosts:
        for pid in netns_pids(host):
            line = cmdline(pid)
            if line and "[listener]" not in line and not line.startswith(
                    ("/usr/sbin/sshd", "/usr/sbin/slurmd")):
                left.append((host, pid, line))
    return left


def link(host, state):
    """Sets the bridge side of `host`'s veth up or down: no FIN, no RST, the host goes silent."""
    subprocess.run(["ip", "link", "set", "hvd-v%s" % host[len("hvd-h"):], state], check=True)


def sshd_pidfile(host):
    return os.path.join(STATE, host, "sshd.pid")


def stop_sshd(host):
    """Kills `host`'s sshd listener: new connections are refused."""
    with open(sshd_pidfile(host)) as f:
        os.kill(int(f.read().split()[0]), signal.SIGKILL)
    os.unlink(sshd_pidfile(host))


def start_sshd(host, if_down=False):
    """Starts `host`'s sshd again, as scripts/cluster/up.sh does, and waits until it listens."""
    if if_down and os.path.exists(sshd_pidfile(host)):
        return
    d = os.path.join(STATE, host)
    subprocess.run(["ip", "netns", "exec", host, "/usr/sbin/sshd", "-f",
                    os.path.join(d, "sshd_config"), "-E", os.path.join(d, "sshd.log")], check=True)
    wait(lambda: os.path.exists(sshd_pidfile(host)), 10, "sshd on %s to start" % host)


def kill_host(host):
    """SIGKILLs every process of `host` (agent, ranks, sshd sessions and listener): a crash."""
    for pid in netns_pids(host):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if os.path.exists(sshd_pidfile(host)):
        os.unlink(sshd_pidfile(host))


def agents_on(host):
    return [pid for pid in netns_pids(host) if "hvd-agent" in cmdline(pid)]


def wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))


class FaultJob:
    """hvdrun --verbose <args> python3 elastic_fault_worker.py (or `worker`: the script and
    its arguments), with the hosts file `hosts` (["hvd-h1:2", ...]) printed by the discovery
    script unless `args` names hosts itself. prefix: what runs hvdrun (salloc ...); ssh: pass
    the cluster's SSH key and known_hosts."""

    def __init__(self, tmp_path, args, hosts=None, env=None, prefix=(), timeout=240,
                 worker=None, ssh=True):
        self.tmp = tmp_path
        self.events_path = str(tmp_path / "events.jsonl")
        self.stop_file = str(tmp_path / "stop")
        self.hosts_file = str(tmp_path / "hosts")
        self.marker = "hvd-elastic-fault-" + uuid.uuid4().hex
        self.deadline = time.monotonic() + timeout
        self.err_lines = []  # (time.time(), line)
        discovery = []
        if hosts is not None:
            self.set_hosts(hosts)
            script = tmp_path / "discover.sh"
            script.write_text("#!/bin/sh\ncat %s\n" % self.hosts_file)
            script.chmod(0o755)
            discovery = ["--host-discovery-script", str(script)]
        run_env = dict(os.environ, OMP_NUM_THREADS="1", HVD_ELASTIC_TEST_MARKER=self.marker,
                       PYTHONPATH=os.environ.get("HVD_TEST_PYTHONPATH", ""))
        run_env.update(FAST_ENV)
        run_env.update(env or {})
        if worker is None:
            worker = [WORKER, "--events", self.events_path, "--stop-file", self.stop_file]
        argv = (list(prefix) + [HVDRUN, "--verbose"] + (SSH if ssh else []) + list(args) +
                discovery + [PYTHON] + list(worker))
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=run_env, start_new_session=True)
        self.out = []
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stderr, True),
                                          daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stdout, False),
                                          daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read(self, stream, is_err):
        for line in iter(stream.readline, b""):
            text = line.decode(errors="replace")
            (self.err_lines.append((time.time(), text)) if is_err else self.out.append(text))

    # ---- driving ---------------------------------------------------------------------------
    def set_hosts(self, hosts):
        tmp = self.hosts_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("".join(h + "\n" for h in hosts))
        os.rename(tmp, self.hosts_file)
        return time.time()

    @property
    def err(self):
        return "".join(line for _, line in self.err_lines)

    def events(self, kind=None):
        return [e for e in read_json_lines(self.events_path) if kind is None or e["ev"] == kind]

    def describe(self):
        rounds = ["round %d: size %d on %s" % r for r in self.rounds()]
        return "exit %s\n--- rounds\n%s\n--- stdout\n%s\n--- stderr\n%s" % (
            self.proc.poll(), "\n".join(rounds), "".join(self.out)[-3000:], self.err[-8000:])

    def wait_for(self, predicate, what, timeout=60):
        deadline = min(self.deadline, time.monotonic() + timeout)
        while time.monotonic() < deadline:
            if predicate():
                return
            if self.proc.poll() is not None and not predicate():
                raise AssertionError("hvdrun ended while waiting for %s\n%s" %
                                     (what, self.describe()))
            time.sleep(0.05)
        raise AssertionError("timed out waiting for %s\n%s" % (what, self.describe()))

    def wait_for_size(self, size, after=0.0, steps=3, timeout=60):
        """Until rank 0 logged `steps` steps at `size` later than `after` (time.time());
        returns the time of the first."""
        def done():
            hits = [e["t"] for e in self.events("step")
                    if e["rank"] == 0 and e["size"] == size and e["t"] > after]
            return len(hits) >= steps and hits[0]
        self.wait_for(done, "%d steps at size %d" % (steps, size), timeout)
        return done()

    def wait_for_err(self, text, after=0.0, timeout=60):
        """Until hvdrun's stderr has a line containing `text` printed after `after`; its time."""
        def found():
            return next((t for t, line in self.err_lines if text in line and t > after), None)
        self.wait_for(lambda: found() is not None, repr(text), timeout)
        return found()

    def finish(self, timeout=60):
        """Asks the workers to stop, waits for hvdrun; its exit code."""
        open(self.stop_file, "w").close()
        return self.wait_exit(timeout)

    def wait_exit(self, timeout=60):
        try:
            self.proc.wait(timeout=max(1.0, min(timeout, self.deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            raise AssertionError("hvdrun did not end in time\n" + self.describe())
        for reader in self._readers:
            reader.join(timeout=10)
        return self.proc.returncode

    def close(self):
        """Always called: whatever happened, nothing of the job survives the test."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        kill_marked(self.marker)

    # ---- checks ----------------------------------------------------------------------------
    def rounds(self):
        """[(round, size, hosts)] of every round that trained, in order."""
        seen = {}
        for e in self.events("resume"):
            r = seen.setdefault(e["round"], [e["round"], e["size"], set()])
            r[2].add(e["host"])
        return [(r, size, ",".join(sorted(hosts))) for r, size, hosts in
                (seen[k] for k in sorted(seen))]

    def sizes(self):
        return [size for _, size, _ in self.rounds()]

    def assert_resumed_from_last_commit(self):
        """Every round after the first resumed, on every member, from the state its rank 0
        had last saved (step and hash): no committed step lost, none repeated beyond it; and
        rank 0's steps run on without a gap from each resume."""
        events = sorted(self.events(), key=lambda e: e["t"])
        resumes = {}
        for e in events:
            if e["ev"] == "resume":
                resumes.setdefault(e["round"], []).append(e)
        for round_number, members in sorted(resumes.items()):
            assert len({(e["step"], e["hash"]) for e in members}) == 1, (
                "round %d resumed with different states: %s" % (round_number, members))
            if round_number == min(resumes):
                continue
            holder = next(e for e in members if e["rank"] == 0)
            saved = [e for e in events if e["ev"] == "commit" and e["worker"] == holder["worker"]
                     and e["t"] <= holder["t"]]
            assert saved, "round %d: its rank 0 (worker %d) never committed" % (
                round_number, holder["worker"])
            assert (holder["step"], holder["hash"]) == (saved[-1]["step"], saved[-1]["hash"]), (
                "round %d resumed at step %d (%s); its rank 0 last committed step %d (%s)" %
                (round_number, holder["step"], holder["hash"], saved[-1]["step"],
                 saved[-1]["hash"]))
            steps = [e["step"] for e in events if e["ev"] == "step" and e["rank"] == 0
                     and e["round"] == round_number]
            assert steps == list(range(holder["step"] + 1, holder["step"] + 1 + len(steps))), (
                "round %d: rank 0's steps %s do not follow its resume at %d" %
                (round_number, steps, holder["step"]))

    def assert_nothing_left(self, timeout=40):
        wait(lambda: not live_marked(self.marker), timeout, "every worker of the job to end")
        wait(lambda: not job_processes(), timeout,
             "no job process on any host (%s)" % job_processes())
