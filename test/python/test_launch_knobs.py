"""End-to-end: hvdrun knobs that act inside the ranks' runtime, seen from the ranks.

Runs from a single pytest process that launches the build tree's hvdrun (HVD_TEST_HVDRUN).
"""
import os
import subprocess
import sys
import textwrap

import pytest

HVDRUN = os.environ.get("HVD_TEST_HVDRUN")

pytestmark = pytest.mark.skipif(not HVDRUN, reason="HVD_TEST_HVDRUN not set")

# Prints the CPUs the runtime's background thread (named hvd-cycle) may run on.
SHOW_CYCLE_THREAD_CPUS = textwrap.dedent("""
    import os
    import hvd.numpy as hvd
    hvd.init()
    for tid in os.listdir("/proc/self/task"):
        try:  # a short-lived thread of the init may be gone by now (ESRCH, ENOENT)
            with open("/proc/self/task/%s/comm" % tid) as f:
                if f.read().strip() != "hvd-cycle":
                    continue
            with open("/proc/self/task/%s/status" % tid) as f:
                for line in f:
                    if line.startswith("Cpus_allowed_list:"):
                        print("cycle thread on", line.split()[1], flush=True)
        except (FileNotFoundError, ProcessLookupError):
            continue
    hvd.shutdown()
""")


# --thread-affinity (HOROVOD_THREAD_AFFINITY): the background thread of local rank i runs on
# the i-th core listed, as in Horovod; it was accepted and ignored until 2026-12-01.
def test_thread_affinity_pins_each_local_ranks_background_thread():
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs")
    a, b = cpus[1], cpus[0]
    result = subprocess.run(
        [HVDRUN, "-np", "2", "--thread-affinity", "%d,%d" % (a, b), sys.executable, "-c",
         SHOW_CYCLE_THREAD_CPUS], capture_output=True, timeout=120)
    out = result.stdout.decode()
    assert result.returncode == 0, out + result.stderr.decode()
    assert sorted(out.splitlines()) == ["[0]<stdout>:cycle thread on %d" % a,
                                        "[1]<stdout>:cycle thread on %d" % b], out


def test_a_bad_thread_affinity_is_refused_naming_it():
    result = subprocess.run(
        [HVDRUN, "-np", "1", sys.executable, "-c", "import hvd.numpy as hvd; hvd.init()"],
        capture_output=True, timeout=120, env=dict(os.environ, HOROVOD_THREAD_AFFINITY="0,x"))
    err = result.stderr.decode()
    assert result.returncode != 0, err
    assert ("THREAD_AFFINITY: expected a comma list of core ids (one per local rank), "
            "got '0,x'") in err, err
