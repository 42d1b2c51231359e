"""The runtime side of elastic jobs on each transport (F27, ULFM-style): a peer that dies
while the others wait in a collective makes that collective fail on every survivor, in
bounded time and without an abort; hvd.shutdown(); hvd.init() in the same process then
re-forms the communicators with the new rank and size, and collectives are right again."""
import re

import pytest

from elastic_harness import NUMPY_WORKER, hvdrun

# No hang: far below the collective timeout these runs use (HVD_GLOO_TIMEOUT_SECONDS=60).
NO_HANG_S = 20


def survivors(run):
    by_worker = {}
    for e in run.events:
        by_worker.setdefault(e["worker"], []).append(e)
    return by_worker


@pytest.mark.parametrize("transport,hosts,mode", [
    ("shm", "localhost:3", "exit0"),
    ("tcp", "localhost:2,127.0.0.1:1", "kill"),
    ("gloo", "localhost:2,127.0.0.1:1", "kill"),
    ("auto", "localhost:2,127.0.0.1:1", "kill"),
])
@pytest.mark.parametrize("op", ["allreduce", "allgather", "broadcast"])
def test_f27_a_dead_peer_fails_the_collective_and_the_survivors_reform(tmp_path, transport, hosts,
                                                                       mode, op):
    run = hvdrun(["-np", "3", "--min-np", "2", "-H", hosts],
                 ["--victim", "2", "--victim-mode", mode, "--op", op], tmp_path,
                 env={"HVD_CPU_OPERATIONS": transport, "HVD_GLOO_TIMEOUT_SECONDS": "60"},
                 worker=NUMPY_WORKER, timeout=120)
    assert run.returncode == 0, run.describe()
    events = survivors(run)
    assert sorted(events) == [0, 1, 2], run.describe()
    assert [e["ev"] for e in events[2]] == ["start", "victim leaves"]
    for worker in (0, 1):
        kinds = [e["ev"] for e in events[worker]]
        assert kinds == ["start", "failed", "reformed", "checked"], run.describe()
        failed, reformed, checked = events[worker][1:]
        assert failed["seconds"] < NO_HANG_S, failed
        # The error names the peer it saw go: the victim, or a survivor that had already
        # failed and closed its connections to re-form (a race that both outcomes win).
        assert re.search(r"rank [12]\b|peer", failed["message"]), failed
        assert (reformed["rank"], reformed["size"]) == (worker, 2), reformed
        assert checked["ok"], checked
