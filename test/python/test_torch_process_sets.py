"""hvd.torch process sets: static sets given to init, dynamic add/remove, and ranks that
disagree on them (run by every python_torch_np* test, as test_torch.py)."""
import pytest
import torch


def test_dynamic_process_sets(hvd):
    size, rank = hvd.size(), hvd.rank()
    if size == 1:
        with pytest.raises(ValueError, match="already exists"):
            hvd.add_process_set([0])  # the global set
        return
    evens = hvd.add_process_set([r for r in range(size) if r % 2 == 0])
    try:
        assert evens.process_set_id not in (None, 0)
        assert evens.included() == (rank % 2 == 0)
        if evens.included():
            assert evens.size() == len(evens.ranks)
            assert evens.rank() == evens.ranks.index(rank)
            got = hvd.allreduce(torch.tensor([float(rank)]), op=hvd.Sum, process_set=evens)
            assert got.item() == float(sum(evens.ranks))
            gathered = hvd.allgather(torch.tensor([rank]), process_set=evens)
            assert gathered.tolist() == evens.ranks
            assert hvd.broadcast(torch.tensor([rank]), evens.ranks[-1], process_set=evens).item() \
                == evens.ranks[-1]
            hvd.barrier(process_set=evens)
        with pytest.raises(ValueError):
            hvd.add_process_set(evens)
    finally:
        assert hvd.remove_process_set(evens)
    assert evens.process_set_id is None
    assert hvd.remove_process_set(evens) is False
    with pytest.raises(ValueError):
        hvd.remove_process_set(hvd.global_process_set)
    with pytest.raises(ValueError):
        hvd.allreduce(torch.ones(1), process_set=evens)


def test_an_alltoall_synchronized_after_its_process_set_was_removed(hvd):
    # The op completed before the set went; its result (and received splits) is still there.
    if hvd.size() == 1:
        pytest.skip("dynamic process sets need 2 ranks")
    first = hvd.add_process_set([0])  # rank 0 alone
    handle = None
    try:
        if first.included():
            handle = hvd.alltoall_async(torch.tensor([5.0, 6.0]), process_set=first)
            while not hvd.poll(handle):
                pass
    finally:
        assert hvd.remove_process_set(first)
    if handle is not None:
        output, received = hvd.synchronize(handle)
        assert output.tolist() == [5.0, 6.0]
        assert received.tolist() == [2]


def test_a_set_added_while_a_rank_was_joined_is_its_set_after_the_join(hvd):
    # Rank 0 is blocked in join() while the others add a set: the add runs on rank 0 too (a
    # joined rank takes part in every collective). Its own add after the join takes that set
    # (until 2026-12-01: ValueError "already exists"), and the set is removed everywhere.
    size, rank = hvd.size(), hvd.rank()
    if size == 1:
        pytest.skip("dynamic process sets need 2 ranks")
    last = [size - 1]
    added = None
    if rank != 0:
        added = hvd.add_process_set(last)
    hvd.join()
    if rank == 0:
        added = hvd.add_process_set(last)
    assert added.process_set_id not in (None, 0)
    assert added.ranks == last
    assert added.included() == (rank == size - 1)
    ids = hvd.allgather(torch.tensor([added.process_set_id]))
    assert ids.tolist() == [added.process_set_id] * size
    assert hvd.remove_process_set(added)
    assert added.process_set_id is None


def test_dynamic_process_sets_that_differ_between_ranks_fail_on_every_rank(hvd):
    # Given ranks that add different sets (the last rank another pair; before, each waited for
    # the others' request forever),
    size, rank = hvd.size(), hvd.rank()
    if size < 3:
        pytest.skip("needs 3 ranks")
    mine = [0, 2] if rank == size - 1 else [0, 1]
    # then every rank's add fails, naming both,
    expected = (r"Mismatched process sets: rank 0 added a process set of ranks \[0, 1\], "
                r"but rank %d added \[0, 2\]" % (size - 1))
    with pytest.raises(RuntimeError, match=expected):
        hvd.add_process_set(mine)
    # and nothing was added: the same set added on every rank works next.
    pair = hvd.add_process_set([0, 1])
    try:
        if pair.included():
            assert hvd.allreduce(torch.ones(1), op=hvd.Sum, process_set=pair).item() == 2.0
    finally:
        assert hvd.remove_process_set(pair)


def test_static_process_sets_and_reinit(hvd):
    size = hvd.size()
    hvd.shutdown()
    assert not hvd.is_initialized()
    with pytest.raises(ValueError, match="not been initialized"):
        hvd.size()
    first = hvd.ProcessSet([0])
    evens = hvd.ProcessSet(range(0, size, 2))
    sets = ([first] if size >= 2 else []) + ([evens] if size > 2 else [])
    hvd.init(process_sets=sets)
    try:
        assert hvd.size() == size
        for process_set in sets:
            assert process_set.process_set_id not in (None, 0)
            if process_set.included():
                got = hvd.allreduce(torch.ones(1), op=hvd.Sum, process_set=process_set)
                assert got.item() == len(process_set.ranks)
        hvd.barrier()
    finally:
        hvd.shutdown()
        hvd.init(process_sets="dynamic")
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == float(size)


def test_process_sets_that_differ_between_ranks_fail_init_on_every_rank(hvd):
    # Given ranks that define different process sets (the last rank another pair),
    size, rank = hvd.size(), hvd.rank()
    if size < 3:
        pytest.skip("needs 3 ranks")
    hvd.shutdown()
    mine = [0, 2] if rank == size - 1 else [0, 1]
    try:
        # then init fails on every rank, naming both definitions (before, it succeeded, and
        # rank 0's allreduce over "[0, 1]" summed with rank 2),
        expected = (r"process sets given to init differ between ranks: rank 0 has "
                    r"\[\[0, 1\]\], rank %d has \[\[0, 2\]\]" % (size - 1))
        with pytest.raises(ValueError, match=expected):
            hvd.init(process_sets=[hvd.ProcessSet(mine)])
        assert not hvd.is_initialized()
        # and an empty set is named as such (it was "set_ranks/set_sizes must not be NULL").
        with pytest.raises(ValueError, match="a process set needs at least one rank"):
            hvd.init(process_sets=[hvd.ProcessSet([])])
    finally:
        hvd.init(process_sets="dynamic")
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == float(size)


def test_the_same_ranks_twice_at_init_is_refused_on_every_rank(hvd):
    # Given two process sets of the same ranks (in another order) passed to init,
    size = hvd.size()
    if size < 2:
        pytest.skip("needs 2 ranks")
    hvd.shutdown()
    try:
        # then init fails naming both (before, each got an id and communicators of its own,
        # where hvd.add_process_set refuses a set that exists),
        with pytest.raises(ValueError, match=r"process sets 1 and 2 given to init have the same "
                                             r"ranks \[0, 1\]"):
            hvd.init(process_sets=[hvd.ProcessSet([0, 1]), hvd.ProcessSet([1, 0])])
        assert not hvd.is_initialized()
    finally:
        hvd.init(process_sets="dynamic")
    # and the job goes on.
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == float(size)
