"""Helpers for the timeline/autotune e2e tests: run hvdrun with hvd-step-bench, read traces.

Every subprocess has a timeout; waits poll with a deadline.
"""
import json
import os
import re
import subprocess
import time

HVDRUN = os.environ.get("HVDRUN", "")
STEP_BENCH = os.environ.get("HVD_STEP_BENCH", "")
TOOL = os.environ.get("HVD_TIMELINE_TOOL", "")


def require_binaries():
    import pytest
    for name, path in (("HVDRUN", HVDRUN), ("HVD_STEP_BENCH", STEP_BENCH),
                       ("HVD_TIMELINE_TOOL", TOOL)):
        if not path or not os.access(path, os.X_OK):
            pytest.fail("%s must name the built binary (CTest sets it)" % name)


def hvdrun(np, hvd_args, bench_args, cwd, env_extra=None, timeout=120):
    """Runs `hvdrun -np N <hvd_args> hvd-step-bench <bench_args>`; returns CompletedProcess."""
    require_binaries()
    env = dict(os.environ)
    env.update(env_extra or {})
    cmd = [HVDRUN, "-np", str(np), "--log-level", "INFO", *hvd_args, STEP_BENCH, *bench_args]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return proc


def check(proc):
    assert proc.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (
        proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
    return proc


def load_trace(path):
    with open(path) as f:
        trace = json.load(f)
    assert isinstance(trace, list) and trace, "%s is not a non-empty JSON array" % path
    return trace


def row_names(trace):
    """{(pid, tid): name} of process and thread rows."""
    names = {}
    for e in trace:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[(e["pid"], None)] = e["args"]["name"]
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    return names


def spans(trace):
    """Matched B/E spans per (pid, tid), in file order: list of dicts with name, ts, dur,
    depth, end_args. Asserts every E has an open B (the file is balanced)."""
    stacks, out = {}, []
    for e in trace:
        key = (e.get("pid"), e.get("tid"))
        if e.get("ph") == "B":
            stacks.setdefault(key, []).append(e)
        elif e.get("ph") == "E":
            assert stacks.get(key), "unmatched E %r" % (e,)
            b = stacks[key].pop()
            out.append({"pid": key[0], "tid": key[1], "name": b["name"], "ts": b["ts"],
                        "dur": e["ts"] - b["ts"], "depth": len(stacks[key]),
                        "end_args": e.get("args", {})})
    return out, sum(len(s) for s in stacks.values())


def summary(path):
    require_binaries()
    proc = subprocess.run([TOOL, "summary", str(path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def summary_rows(text, section):
    """Rows of one summary table ('op', 'tensor (op)', 'rank (op)') as {label: [fields]}."""
    rows, inside = {}, False
    for line in text.splitlines():
        if line.startswith(section + " ") and "count" in line:
            inside = True
            continue
        if inside and not line.strip():
            break
        if inside:
            m = re.match(r"^(.*?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+([\d.]+)%\s+([\d.]+)%"
                         r"\s+([\d.]+)%\s+([\d.]+)$", line)
            assert m, "unparsed summary line %r" % line
            rows[m.group(1).strip()] = [float(x) for x in m.groups()[1:]]
    return rows


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
