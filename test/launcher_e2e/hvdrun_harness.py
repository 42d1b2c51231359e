"""Shared helpers for the launcher end-to-end tests: run the built hvdrun, find processes.

Every wait has a deadline; nothing sleeps and hopes.
"""
import os
import signal
import subprocess
import sys
import time
import uuid

HVDRUN = os.environ.get("HVDRUN", "")
PYTHON = sys.executable or "/usr/bin/python3"
DEFAULT_TIMEOUT = 60


def require_hvdrun():
    import pytest
    if not HVDRUN or not os.access(HVDRUN, os.X_OK):
        pytest.fail("HVDRUN must name the built hvdrun binary (CTest sets it)")


def run(args, timeout=DEFAULT_TIMEOUT, input=None, env=None, cwd=None):
    """Runs hvdrun with `args` to completion; returns CompletedProcess with bytes output."""
    require_hvdrun()
    return subprocess.run([HVDRUN] + list(args), input=input, capture_output=True,
                          timeout=timeout, env=env, cwd=cwd)


def start(args, env=None, stdout=subprocess.PIPE, **kwargs):
    require_hvdrun()
    return subprocess.Popen([HVDRUN] + list(args), stdout=stdout, stderr=subprocess.PIPE,
                            env=env, **kwargs)


def unique_marker():
    return "hvd-e2e-" + uuid.uuid4().hex


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))


def _state(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
        return data[data.rindex(b")") + 2:data.rindex(b")") + 3].decode()
    except (OSError, ValueError):
        return None


def live_pids_with_marker(marker):
    """Pids of live (not zombie) processes whose argv contains `marker`."""
    found = []
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid == os.getpid():
            continue
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if needle in cmdline and _state(pid) not in (None, "Z", "X"):
            found.append(pid)
    return found


def assert_no_survivors(marker, timeout=10):
    wait_for(lambda: not live_pids_with_marker(marker), timeout,
             "every process of the job (marker %s) to be gone" % marker)


def kill_leftovers(marker):
    for pid in live_pids_with_marker(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def python_rank(script, marker=None):
    """argv that runs `script` in Python as a rank, tagged with `marker` in its argv."""
    argv = [PYTHON, "-c", script]
    if marker:
        argv.append(marker)
    return argv


# A timeline as a writer killed between the two writes of a growth leaves it
# (timeline/timeline_writer.h): records, spaces, the old "\n]\n" at the end of a page, spaces,
# the new "\n]\n" at the end of the next page.
TORN_TIMELINE = ('[\n{"name":"process_name","ph":"M","pid":0,"args":{"name":"rank 0"}}'
                 .ljust(4093) + "\n]\n" + " " * 4093 + "\n]\n")


def torn_timeline_rank(directory):
    """argv of a rank that, as rank 0, writes TORN_TIMELINE at $HVD_TIMELINE and SIGKILLs
    itself, as a writer killed mid-growth would be; other ranks exit 0."""
    rank = directory / "torn_timeline_rank.py"
    rank.write_text(
        "import os, signal, sys\n"
        "if os.environ['HVD_RANK'] == '0':\n"
        "    with open(os.environ['HVD_TIMELINE'], 'w') as f:\n"
        "        f.write(sys.argv[1])\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n")
    return ["/usr/bin/python3", str(rank), TORN_TIMELINE]


def netns_pids(host):
    """The pids running in network namespace `host` (a host of scripts/cluster/up.sh)."""
    out = subprocess.run(["ip", "netns", "pids", host], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def cmdline(pid):
    """Process `pid`'s command line as one string ("" once it is gone)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def physical_cores():
    """The physical cores among this process's CPUs, as hvdrun counts them for each rank's
    OMP_NUM_THREADS (launcher/worker/worker_threads.h): a CPU without topology is a core."""
    cores, unknown = set(), 0
    for cpu in os.sched_getaffinity(0):
        try:
            topology = "/sys/devices/system/cpu/cpu%d/topology/" % cpu
            with open(topology + "physical_package_id") as package, \
                    open(topology + "core_id") as core:
                cores.add((package.read().strip(), core.read().strip()))
        except OSError:
            unknown += 1
    return len(cores) + unknown


def python3_without_torch(tmp_path):
    """(shim, env): a `python3` first on PATH that is not Debian's, as pyenv's or a venv's would
    be (the system interpreter without its site folders, so torch is missing there)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "python3"
    shim.write_text("#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n")
    shim.chmod(0o755)
    return shim, dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ.get("PATH", "")))
