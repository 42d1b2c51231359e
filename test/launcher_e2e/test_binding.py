"""hvdrun --bind-to: each local rank gets an even share of hvdrun's CPUs.

launcher/worker/cpu_binding.h decides the shares."""
import os

import pytest

from hvdrun_harness import run

SHOW_CPUS = "grep Cpus_allowed_list /proc/self/status | cut -f2"


def parse_cpu_list(text):
    cpus = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def rank_cpus(args, env=None):
    result = run(args + ["sh", "-c", SHOW_CPUS], env=env)
    assert result.returncode == 0, result.stderr.decode()
    by_rank = {}
    for line in result.stdout.decode().splitlines():
        prefix, _, cpus = line.partition("<stdout>:")
        by_rank[int(prefix.strip("[]"))] = parse_cpu_list(cpus)
    return by_rank


def test_local_ranks_get_disjoint_even_shares_that_cover_the_cpus():
    mine = os.sched_getaffinity(0)
    n = min(2, len(mine))
    by_rank = rank_cpus(["-np", str(n), "-H", "localhost:%d" % n, "--bind-to", "core"])
    assert sorted(by_rank) == list(range(n))
    union = set().union(*by_rank.values())
    assert union == mine
    assert sum(len(c) for c in by_rank.values()) == len(mine)  # disjoint
    sizes = sorted(len(c) for c in by_rank.values())
    assert sizes[-1] - sizes[0] <= 1


def test_more_ranks_than_cpus_are_not_bound():
    mine = os.sched_getaffinity(0)
    n = len(mine) + 1
    by_rank = rank_cpus(["-np", str(n), "-H", "localhost:%d" % n, "--bind-to", "core"])
    assert all(cpus == mine for cpus in by_rank.values()), by_rank


def test_default_and_none_leave_placement_to_the_kernel_and_the_variable_binds():
    mine = os.sched_getaffinity(0)
    for args in ([], ["--bind-to", "none"]):
        by_rank = rank_cpus(["-np", "2", "-H", "localhost:2"] + args)
        assert all(cpus == mine for cpus in by_rank.values()), (args, by_rank)
    if len(mine) >= 2:
        env = dict(os.environ, HVD_BIND_TO="core")
        by_rank = rank_cpus(["-np", "2", "-H", "localhost:2"], env=env)
        assert by_rank[0].isdisjoint(by_rank[1]), by_rank
        # the flag wins over the variable
        by_rank = rank_cpus(["-np", "2", "-H", "localhost:2", "--bind-to", "none"], env=env)
        assert all(cpus == mine for cpus in by_rank.values()), by_rank


def test_bad_values_are_refused_naming_the_flag_or_the_variable():
    result = run(["-np", "2", "--bind-to", "socket", "true"])
    assert result.returncode == 64, result.stderr.decode()
    assert "--bind-to" in result.stderr.decode() and "socket" in result.stderr.decode()
    env = dict(os.environ, HVD_BIND_TO="cores")
    result = run(["-np", "2", "true"], env=env)
    assert result.returncode != 0
    assert "HVD_BIND_TO" in result.stderr.decode() and "cores" in result.stderr.decode()


def test_one_machine_under_two_host_names_is_shared_as_one():
    # -H localhost:1,127.0.0.1:1 is one machine: each name's local rank 0 got the first half of
    # the CPUs, both ranks the same ones (until 2026-12-01); now the machine's ranks share it.
    mine = os.sched_getaffinity(0)
    if len(mine) < 2:
        pytest.skip("needs 2 CPUs")
    by_rank = rank_cpus(["-np", "2", "-H", "localhost:1,127.0.0.1:1", "--bind-to", "core"])
    assert sorted(by_rank) == [0, 1]
    assert by_rank[0].isdisjoint(by_rank[1]), by_rank
    assert by_rank[0] | by_rank[1] == mine
