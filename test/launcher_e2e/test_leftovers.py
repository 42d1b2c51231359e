"""What a killed rank leaves on its host, cleaned up by hvdrun once the job's ranks have ended
(launcher/local/rank_leftovers.h): a shared-memory segment whose group never formed, and a timeline
torn mid-growth."""
import json
import os
import re
import subprocess
import time

import pytest

from hvdrun_harness import HVDRUN, require_hvdrun, run, torn_timeline_rank

STEP_BENCH = os.environ.get("HVD_STEP_BENCH", "")


def shm_entries(prefix):
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith(prefix))


def test_a_segment_whose_group_never_formed_is_removed(tmp_path):
    # Given 2 ranks where rank 1 asks for other staging than rank 0 (HVD_SHM_BUFFER_BYTES), so
    # it cannot map rank 0's segment and fails, while rank 0 waits for it with the segment's
    # name in /dev/shm; hvdrun then ends rank 0 with SIGTERM in that window. Segments have a
    # name only where members cannot open member 0's through /proc (another pid namespace) or
    # /dev/shm has no O_TMPFILE; HVD_SHM_NAMED=1 takes that path
    if not STEP_BENCH or not os.access(STEP_BENCH, os.X_OK):
        pytest.fail("HVD_STEP_BENCH must name the built hvd-step-bench (CTest sets it)")
    script = tmp_path / "rank.sh"
    script.write_text('if [ "$HVD_RANK" = 1 ]; then export HVD_SHM_BUFFER_BYTES=8388608; fi\n'
                      'exec "$1" --steps 3\n')
    proc = run(["-np", "2", "--verbose", "--start-timeout", "60", "sh", str(script), STEP_BENCH],
               timeout=120, env=dict(os.environ, HVD_CPU_OPERATIONS="shm", HVD_SHM_NAMED="1"))
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 1, err
    found = re.search(r"segment /(hvd-[0-9a-f]{16}-)[0-9a-f]{16}-\d+ has another size", err)
    assert found, err
    # Then once hvdrun has exited, nothing of the job is left in /dev/shm, and --verbose said
    # what it removed
    assert shm_entries(found.group(1)) == [], err
    assert re.search(r"removed /dev/shm/%s\S+, left by a rank killed" % found.group(1), err), err


@pytest.mark.parametrize("mode", ["static", "elastic"])
def test_a_timeline_torn_by_a_killed_writer_is_repaired(tmp_path, mode):
    # Given rank 0 that leaves its timeline (a path relative to the job's directory) torn
    # mid-growth and is SIGKILLed, as a writer killed in that window would be
    args = ["-np", "2", "--verbose", "--timeline-filename", "trace.json"]
    if mode == "elastic":
        args += ["--min-np", "2", "--max-np", "2", "-H", "localhost:2"]
    require_hvdrun()
    proc = subprocess.run([HVDRUN] + args + torn_timeline_rank(tmp_path),
                          cwd=tmp_path, capture_output=True, timeout=120)
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode != 0, err
    # Then hvdrun repaired it: it parses, holding the record, and --verbose said so
    with open(tmp_path / "trace.json") as f:
        trace = json.load(f)
    assert [e["name"] for e in trace] == ["process_name"], trace
    assert "repaired timeline '%s'" % (tmp_path / "trace.json") in err, err


# A rank reaped early whose pid another process takes as the leader of its own group (a daemon,
# another job's rank): hvdrun's final sweep of the ranks' groups used to SIGKILL that group
# (until 2026-12-01). The pid is handed out on purpose through ns_last_pid (root only).
def test_the_final_sweep_spares_a_group_that_took_a_reaped_ranks_pid(tmp_path):
    require_hvdrun()
    if not os.access("/proc/sys/kernel/ns_last_pid", os.W_OK):
        pytest.skip("needs a writable /proc/sys/kernel/ns_last_pid (root)")
    go = tmp_path / "go"
    proc = subprocess.Popen(
        [HVDRUN, "--verbose", "-np", "2", "sh", "-c",
         'if [ "$HVD_RANK" = 1 ]; then while [ ! -e %s ]; do sleep 0.02; done; fi' % go],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    squatter = None
    try:
        guardian = None
        deadline = time.monotonic() + 30
        while guardian is None and time.monotonic() < deadline:
            line = proc.stderr.readline().decode()
            m = re.search(r"started rank 0 on \S+ \(pid (\d+)", line)
            if m:
                guardian = int(m.group(1))
        assert guardian is not None, "hvdrun did not say rank 0's pid"
        while os.path.exists("/proc/%d" % guardian) and time.monotonic() < deadline:
            time.sleep(0.02)  # rank 0 exits at once; hvdrun reaps its guardian
        assert not os.path.exists("/proc/%d" % guardian)
        for _ in range(50):
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(guardian - 1))
            candidate = subprocess.Popen(["sleep", "60"], start_new_session=True)
            if candidate.pid == guardian:
                squatter = candidate
                break
            candidate.kill()
            candidate.wait()
        if squatter is None:
            pytest.skip("could not hand rank 0's pid to another process (pids were busy)")
        go.touch()
        assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()
        assert squatter.poll() is None, "hvdrun killed the process group of pid %d" % guardian
    finally:
        go.touch()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if squatter is not None:
            squatter.kill()
            squatter.wait()
