"""Helpers for the elastic end-to-end tests: a discovery script whose output follows a
schedule, runs of the real hvdrun, and readers for the workers' logs. Every run has a
deadline; every leftover process of a run is killed by its marker.
"""
import json
import os
import subprocess
import sys
import time
import uuid

HVDRUN = os.environ.get("HVDRUN", "")
PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "elastic_train.py")
NUMPY_WORKER = os.path.join(HERE, "elastic_numpy_worker.py")


def require_hvdrun():
    import pytest
    if not HVDRUN or not os.access(HVDRUN, os.X_OK):
        pytest.fail("HVDRUN must name the built hvdrun binary (CTest sets it)")


def discovery_script(path, logfile, schedule):
    """Writes an executable script printing the hosts of the schedule entry for the number of
    epochs logged so far: schedule = [(lines or None, ["host:slots", ...]), ...]; None is the
    default (Horovod's elastic test harness does the same)."""
    cases = []
    default = []
    for lines, hosts in schedule:
        body = "".join("echo %s; " % h for h in hosts) or "true; "
        if lines is None:
            default = body
        else:
            cases.append("%d) %s;;" % (lines, body))
    text = ("#!/bin/sh\nn=$(cat %s 2>/dev/null | wc -l)\ncase $n in\n%s\n*) %s;;\nesac\n" %
            (logfile, "\n".join(cases), default or "true; "))
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return str(path)


class Run:
    """The result of one hvdrun run: exit code, output, and the workers' logs."""

    def __init__(self, proc, out, err, logfile, events):
        self.returncode = proc.returncode
        self.out = out
        self.err = err
        self.log = read_json_lines(logfile)
        self.events = read_json_lines(events)

    def sizes(self):
        return [line["size"] for line in self.log]

    def describe(self):
        return "exit %d\n--- log\n%s\n--- stdout\n%s\n--- stderr\n%s" % (
            self.returncode, "\n".join(json.dumps(l) for l in self.log), self.out[-4000:],
            self.err[-6000:])


def read_json_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def hvdrun(hvd_args, worker_args, tmp_path, timeout=180, env=None, worker=TRAIN):
    """Runs `hvdrun <hvd_args> python3 <worker> --logfile L --events E <worker_args>`."""
    require_hvdrun()
    logfile = str(tmp_path / "log.jsonl")
    events = str(tmp_path / "events.jsonl")
    marker = "hvd-elastic-e2e-" + uuid.uuid4().hex
    argv = ([HVDRUN, "--verbose"] + list(hvd_args) +
            [PYTHON, worker, "--logfile", logfile, "--events", events] + list(worker_args))
    run_env = dict(os.environ)
    run_env.setdefault("OMP_NUM_THREADS", "1")
    run_env["HVD_ELASTIC_TEST_MARKER"] = marker
    if env:
        run_env.update(env)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=run_env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        raise AssertionError("hvdrun did not finish within %d s:\n%s" %
                             (timeout, err.decode(errors="replace")[-6000:]))
    finally:
        kill_marked(marker)
    return Run(proc, out.decode(errors="replace"), err.decode(errors="replace"), logfile, events)


def kill_marked(marker):
    """Kills leftover processes whose environment carries `marker` (none should exist)."""
    needle = ("HVD_ELASTIC_TEST_MARKER=" + marker).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as f:
                if needle in f.read():
                    os.kill(int(entry), 9)
        except OSError:
            pass


def live_marked(marker):
    needle = ("HVD_ELASTIC_TEST_MARKER=" + marker).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as f:
                if needle in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


def assert_state_recovered(run):
    """Every resume after a reset starts from exactly a committed state: its hash equals the
    hash some rank committed at the same (epoch, batch, commits), and all members of a round
    resume with the same state."""
    commits = {}
    for e in run.events:
        if e["ev"] == "commit":
            commits.setdefault((e["epoch"], e["batch"], e["commits"]), set()).add(e["hash"])
    for key, hashes in commits.items():
        assert len(hashes) == 1, "ranks committed different states at %s: %s\n%s" % (
            key, hashes, run.describe())
    by_round = {}
    for e in run.events:
        if e["ev"] != "resume":
            continue
        by_round.setdefault(e["round"], set()).add(e["hash"])
        if e["round"] == 1:
            continue
        key = (e["epoch"], e["batch"], e["commits"])
        assert key in commits, "round %d resumed at %s, never committed\n%s" % (
            e["round"], key, run.describe())
        assert e["hash"] in commits[key], (
            "round %d resumed at %s with state %s, committed %s\n%s" %
            (e["round"], key, e["hash"], commits[key], run.describe()))
    for round_number, hashes in by_round.items():
        assert len(hashes) == 1, "round %d resumed with different states %s\n%s" % (
            round_number, hashes, run.describe())


def rounds_by_worker(run):
    """{round: sorted [(rank, start_rank, size)]} from the resume events."""
    rounds = {}
    for e in run.events:
        if e["ev"] == "resume":
            rounds.setdefault(e["round"], []).append((e["rank"], e["start_rank"], e["size"]))
    return {r: sorted(v) for r, v in rounds.items()}
