"""Elastic jobs that grow and shrink with the discovery script (F01, F07, F08), and the
shared-memory transport re-forming on one host as its slot count changes."""
import pytest

from elastic_harness import assert_state_recovered, discovery_script, hvdrun, rounds_by_worker

SCHEDULE = [(0, ["localhost:{s}"]), (1, ["localhost:{s}", "127.0.0.1:{s}"]),
            (None, ["127.0.0.1:{s}"])]


def scale_up_down(tmp_path, slots, extra_hvd=(), epochs=3):
    schedule = [(n, [h.format(s=slots) for h in hosts]) for n, hosts in SCHEDULE]
    script = discovery_script(tmp_path / "discover.sh", tmp_path / "log.jsonl", schedule)
    return hvdrun(["-np", str(slots), "--min-np", str(slots), "--max-np", str(2 * slots),
                   "--host-discovery-script", script, "--host-discovery-interval", "0.05"] +
                  list(extra_hvd),
                  ["--epochs", str(epochs), "--wait-for-update-after", "0,1"], tmp_path)


# F01: sizes S, 2S, S; the last epoch runs on 127.0.0.1 only, its rank 0 the worker that
# started there as rank S, after three rendezvous. The removed workers are told why.
@pytest.mark.parametrize("slots", [1, 2])
def test_f01_scale_up_then_down(tmp_path, slots):
    run = scale_up_down(tmp_path, slots)
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [slots, 2 * slots, slots], run.describe()
    assert [l["hostname"] for l in run.log] == ["localhost", "localhost", "127.0.0.1"]
    assert run.log[2]["start_rank"] == slots
    assert [l["rendezvous"] for l in run.log] == [1, 2, 3]
    assert [l["round"] for l in run.log] == [1, 2, 3]
    rounds = rounds_by_worker(run)
    assert [len(rounds[r]) for r in (1, 2, 3)] == [slots, 2 * slots, slots], rounds
    assert "has been removed from the elastic job: host localhost is no longer available" in \
        run.err, run.describe()
    assert "Traceback" not in run.err, run.describe()
    assert_state_recovered(run)


# A new host's worker waits for the members' next commit however long that takes: here the
# members spend 6 s in epoch 1 before it, with --elastic-timeout 1. Until 2026-12-01 the worker
# gave up after --elastic-timeout plus a minute, exited 1, and hvdrun blacklisted its healthy
# host (seen failing with that minute cut to 1 s).
def test_a_new_worker_waits_for_a_rare_commit_longer_than_the_elastic_timeout(tmp_path):
    script = discovery_script(tmp_path / "discover.sh", tmp_path / "log.jsonl",
                              [(0, ["localhost:1"]), (None, ["localhost:1", "127.0.0.1:1"])])
    run = hvdrun(["-np", "1", "--min-np", "1", "--max-np", "2", "--elastic-timeout", "1",
                  "--host-discovery-script", script, "--host-discovery-interval", "0.05"],
                 ["--epochs", "3", "--sleep-before-epoch", "1:6"], tmp_path)
    assert run.returncode == 0, run.describe()
    assert run.sizes()[0] == 1 and run.sizes()[-1] == 2, run.describe()
    assert "host 127.0.0.1 is blacklisted" not in run.err, run.describe()
    assert "waiting for a rank" not in run.err, run.describe()
    assert_state_recovered(run)


# F07: two scale events are two resets. Horovod's message, word for word.
def test_f07_reset_limit(tmp_path):
    (tmp_path / "a").mkdir()
    run = scale_up_down(tmp_path / "a", 1, ["--reset-limit", "1"])
    assert run.returncode != 0, run.describe()
    assert ("Horovod was shutdown because number of resets during elastic job exceeded "
            "limit: 1") in run.err, run.describe()
    assert run.sizes()[:2] == [1, 2], run.describe()
    (tmp_path / "b").mkdir()
    run = scale_up_down(tmp_path / "b", 1, ["--reset-limit", "2"])
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [1, 2, 1]


# F08: a failed worker's host is blacklisted for the cooldown, then comes back while the
# discovery script still lists it; it fails again later and comes back again.
def test_f08_blacklisted_host_comes_back_after_the_cooldown(tmp_path):
    script = discovery_script(tmp_path / "discover.sh", tmp_path / "log.jsonl",
                              [(None, ["localhost:2", "127.0.0.1:2"])])
    run = hvdrun(["-np", "4", "--min-np", "2", "--host-discovery-script", script,
                  "--host-discovery-interval", "0.05", "--blacklist-cooldown-range", "1", "2"],
                 ["--epochs", "5", "--exit-schedule", '{"1,0": [3], "3,0": [3]}',
                  "--exit-mode", "kill", "--wait-for-update-after", "1,3"], tmp_path)
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [4, 2, 4, 2, 4], run.describe()
    assert run.err.count("host 127.0.0.1 is blacklisted for ") == 2, run.describe()
    # The survivors learn of the failure from their peers at once, not at the 30 s timeout: the
    # hosts share the ranks' groups (shared memory within, TCP across), and rank 1, whose cross
    # peer died, once left rank 0 waiting in the next shared-memory round (2026-11-24).
    assert "did not arrive within" not in run.err, run.describe()
    assert run.log[2]["start_rank"] == 0
    assert_state_recovered(run)


# The shared-memory transport alone (every group on one host) re-forms with the new size
# when the host's slot count grows and shrinks.
def test_shared_memory_reforms_as_the_slot_count_changes(tmp_path):
    script = discovery_script(tmp_path / "discover.sh", tmp_path / "log.jsonl",
                              [(0, ["localhost:2"]), (1, ["localhost:3"]), (None, ["localhost:2"])])
    run = hvdrun(["-np", "2", "--min-np", "2", "--host-discovery-script", script,
                  "--host-discovery-interval", "0.05"],
                 ["--epochs", "3", "--wait-for-update-after", "0,1"], tmp_path,
                 env={"HVD_CPU_OPERATIONS": "shm"})
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [2, 3, 2], run.describe()
    assert "removing worker 2 from the job: host localhost now has 2 slot(s)" in run.err
    assert_state_recovered(run)


# Horovod #3494: a host is removed (the survivors would skip the state sync) but the
# survivors are below --min-np, so the round waits until a new host joins; the new worker
# syncs from rank 0, and so must the survivors, or the broadcast deadlocks.
def test_removal_below_min_np_then_a_new_host_syncs_everyone(tmp_path):
    counter = tmp_path / "runs"
    script = tmp_path / "discover.sh"
    # One epoch logged: localhost is gone; 127.0.0.2 appears 20 runs (1 s) later.
    script.write_text(
        "#!/bin/sh\nn=$(cat %s 2>/dev/null | wc -l)\n"
        "if [ $n -eq 0 ]; then echo localhost:1; echo 127.0.0.1:1; exit 0; fi\n"
        "echo x >> %s\necho 127.0.0.1:1\n"
        "if [ $(wc -l < %s) -gt 20 ]; then echo 127.0.0.2:1; fi\n" %
        (tmp_path / "log.jsonl", counter, counter))
    script.chmod(0o755)
    run = hvdrun(["-np", "2", "--min-np", "2", "--host-discovery-script", str(script),
                  "--host-discovery-interval", "0.05"],
                 ["--epochs", "3", "--wait-for-update-after", "0"], tmp_path, timeout=120)
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [2, 2, 2], run.describe()
    assert [l["hostname"] for l in run.log] == ["localhost", "127.0.0.1", "127.0.0.1"]
    assert [l["round"] for l in run.log] == [1, 2, 2]
    assert_state_recovered(run)
