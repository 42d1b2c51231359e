"""Attacks on a live job's rendezvous server, through the real hvdrun: each is refused, none
reaches the job's keys, and the job still completes with the right results.

hvd_attack_probe runs before rank 0's worker, while rank 1 is already waiting at the
rendezvous; it prints one "probe: <attack>: refused: ..." line per attack and fails rank 0 when
any got through (attack_probe.cc).
"""
import os
import subprocess

HVDRUN = os.environ.get("HVDRUN", "")
PROBE = os.environ.get("HVD_ATTACK_PROBE", "")
WORKER = os.environ.get("HVD_E2E_WORKER", "")

ATTACKS = ["wrong-key", "other-job", "other-job-id-with-this-key", "replay-same-connection",
           "replay-new-connection", "request-without-handshake", "garbage", "4-GiB-length"]


def run_attacked_job(np):
    script = ('if [ "$HVD_RANK" = 0 ]; then "$0" || exit 1; fi; '
              'exec "$1" allreduce allgather broadcast barrier')
    return subprocess.run([HVDRUN, "-np", str(np), "--start-timeout", "60",
                           "sh", "-c", script, PROBE, WORKER],
                          capture_output=True, timeout=120)


def test_every_attack_is_refused_and_the_job_completes():
    result = run_attacked_job(2)
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0, out + err
    for attack in ATTACKS:
        assert "probe: %s: refused" % attack in out, out
    assert "probe: 0 attacks got through" in out, out
    for scenario in ["allreduce", "allgather", "broadcast", "barrier"]:
        assert "[%s] ok on 2 ranks" % scenario in out, out
    # The server named each refusal (one WARNING per rejected connection).
    rejections = [line for line in err.splitlines() if "rejected connection from" in line]
    assert len(rejections) >= len(ATTACKS) - 1, err
    for reason in ["authentication failed", "replayed or reordered frame", "malformed frame",
                   "oversized frame", "is not this server's job"]:
        assert any(reason in line for line in rejections), (reason, err)
