"""Hierarchical collectives across the two hosts of scripts/cluster/up.sh 2: shared memory
within a host, TCP between hosts, chosen automatically when the ranks share hosts evenly.

Each case runs tests/cluster_e2e/hierarchical_worker.py (known values at every size) and reads
rank 0's timeline to see which algorithm ran: HIER_ALLREDUCE (hierarchical) or TCP_ALLREDUCE.
"""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_mpi_and_torch import PYTHONPATH, clean_env  # noqa: E402
from test_multi_host import SSH, run  # noqa: E402

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hierarchical_worker.py")

pytestmark = pytest.mark.skipif(not os.path.isdir(os.path.join(PYTHONPATH, "hvd")),
                                reason="the hvd Python package is not built")


def run_worker(tmp_path, hosts, np=4, flags=(), **env):
    timeline = tmp_path / "timeline.json"
    result = run(SSH + list(flags) + ["-np", str(np), "-H", hosts, "--timeline", str(timeline),
                                      "/usr/bin/python3", WORKER],
                 timeout=300, env=clean_env(PYTHONPATH=PYTHONPATH, OMP_NUM_THREADS="1", **env))
    out, err = result.stdout.decode(), result.stderr.decode()
    activities = set()
    if timeline.exists():
        for event in json.loads(timeline.read_text() or "[]"):
            if isinstance(event, dict) and event.get("name", "").endswith("_ALLREDUCE"):
                activities.add(event["name"])
    return result.returncode, out, err, activities


def test_two_hosts_of_two_ranks_use_the_hierarchy_by_default(tmp_path):
    code, out, err, activities = run_worker(tmp_path, "hvd-h1:2,hvd-h2:2")
    assert code == 0, out + err
    assert sorted(l for l in out.splitlines() if "OK rank" in l) == [
        f"[{r}]<stdout>:OK rank {r}" for r in range(4)], out
    assert "HIER_ALLREDUCE" in activities and "TCP_ALLREDUCE" not in activities, activities


def test_hierarchical_allreduce_off_uses_tcp_for_the_whole_group(tmp_path):
    code, out, err, activities = run_worker(tmp_path, "hvd-h1:2,hvd-h2:2",
                                            flags=["--no-hierarchical-allreduce"])
    assert code == 0, out + err
    assert "TCP_ALLREDUCE" in activities and "HIER_ALLREDUCE" not in activities, activities


def test_hierarchical_allgather_on_request(tmp_path):
    code, out, err, _ = run_worker(tmp_path, "hvd-h1:2,hvd-h2:2",
                                   flags=["--hierarchical-allgather"])
    assert code == 0, out + err


def test_uneven_hosts_fall_back_to_tcp_unless_the_hierarchy_is_required(tmp_path):
    code, out, err, activities = run_worker(tmp_path, "hvd-h1:3,hvd-h2:1")
    assert code == 0, out + err
    assert "TCP_ALLREDUCE" in activities and "HIER_ALLREDUCE" not in activities, activities
    code, out, err, _ = run_worker(tmp_path, "hvd-h1:3,hvd-h2:1",
                                   flags=["--hierarchical-allreduce"])
    assert code != 0
    assert "spread evenly over its hosts in rank order" in out + err, out + err
    assert "hvd-h1 x3, hvd-h2 x1" in out + err, out + err
