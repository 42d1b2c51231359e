"""Elastic state (TorchState, ObjectState), ElasticSampler and the run wrapper at one rank."""
import pytest
import torch

import hvd.torch as hvd


@pytest.fixture(autouse=True)
def _init(hvd):  # noqa: F811  (conftest's session fixture initializes once)
    yield


def test_framework_independent_names_are_shared_with_hvd_torch_elastic():
    import importlib
    common = importlib.import_module("hvd.elastic")
    for name in ("ObjectState", "State", "run_fn"):
        assert getattr(common, name) is getattr(hvd.elastic, name)
    # The PyTorch pieces live only in hvd.torch.elastic (hvd.elastic never imports torch).
    for name in ("run", "TorchState", "ElasticSampler"):
        assert hasattr(hvd.elastic, name)
        assert not hasattr(common, name)


def test_torch_state_commit_restore_sync():
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)
    saved = model.weight.detach().clone()
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    state.epoch, state.batch = 3, 7
    assert not torch.equal(model.weight, saved)
    state.restore()
    assert torch.equal(model.weight, saved) and (state.epoch, state.batch) == (0, 0)

    optimizer.step()
    state.epoch = 2
    state.commit()
    committed = model.weight.detach().clone()
    state.epoch = 5
    state.restore()
    assert torch.equal(model.weight, committed) and state.epoch == 2
    state.sync()
    assert state.epoch == 2


# An LR scheduler in a TorchState is saved, restored and synced with its state_dict (Horovod
# kept it as a plain attribute: restore() left its epoch where training had moved it).
@pytest.mark.parametrize("make", [
    lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5),
    lambda opt: torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0),
])
def test_torch_state_saves_and_restores_an_lr_scheduler(make):
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = make(optimizer)
    state = hvd.elastic.TorchState(model, optimizer, scheduler=scheduler)
    assert state.scheduler is scheduler
    saved = scheduler.state_dict()
    for loss in (3.0, 4.0, 5.0):
        optimizer.step()
        scheduler.step(loss) if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau) \
            else scheduler.step()
    assert scheduler.state_dict() != saved

    def now():  # (a ReduceLROnPlateau keeps the _last_lr its first step added)
        return {k: v for k, v in scheduler.state_dict().items() if k in saved}

    state.restore()
    assert now() == saved and state.scheduler is scheduler
    state.sync()
    assert now() == saved


def test_torch_state_assigning_handled_attribute_saves_it():
    state = hvd.elastic.TorchState(torch.nn.Linear(2, 1))
    replacement = torch.nn.Linear(2, 1)
    state.model = replacement
    with torch.no_grad():
        replacement.weight.zero_()
    state.restore()
    assert state.model is replacement and not torch.equal(replacement.weight, torch.zeros(1, 2))


def test_object_state_and_reset_callbacks():
    calls = []
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, lr=0.5, name="x")
    state.register_reset_callbacks([lambda: calls.append("reset")])
    state.lr = 1.0
    state.restore()
    assert state.lr == 0.5
    state.on_reset()
    assert calls == ["reset"]


def test_hosts_updated_interrupt_is_raised_on_commit():
    from hvd.elastic import HostUpdateResult
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, step=1)
    state.on_hosts_updated(10, HostUpdateResult.removed)
    with pytest.raises(hvd.HostsUpdatedInterrupt) as info:
        state.commit()
    assert info.value.skip_sync is True
    state.commit()  # the update was consumed


def test_elastic_sampler_repartitions_remaining_samples():
    dataset = list(range(10))
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=False)
    assert list(sampler) == list(range(10)) and len(sampler) == 10
    sampler.record_batch(0, 4)
    state = sampler.state_dict()
    assert state == {"epoch": 0, "processed_num": 4}
    resumed = hvd.elastic.ElasticSampler(dataset, shuffle=False)
    resumed.load_state_dict(state)
    assert list(resumed) == list(range(4, 10))
    resumed.set_epoch(1)
    assert resumed.processed_num == 0 and len(resumed) == 10
    shuffled = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=3)
    assert sorted(shuffled) == list(range(10)) and list(shuffled) != list(range(10))


def test_elastic_sampler_pads_to_an_even_split(monkeypatch):
    import hvd.torch.elastic.sampler as sampler_module
    monkeypatch.setattr(sampler_module, "size", lambda: 3)
    shards = []
    for rank in range(3):
        monkeypatch.setattr(sampler_module, "rank", lambda rank=rank: rank)
        shards.append(list(sampler_module.ElasticSampler(list(range(7)), shuffle=False)))
    assert [len(s) for s in shards] == [3, 3, 3]
    assert sorted(set(sum(shards, []))) == list(range(7))


# Fewer samples left than half the ranks (the end of an epoch after a reset): every rank still
# yields len() samples (some yielded none, and the ranks' step counts differed: a stall).
@pytest.mark.parametrize("left, ranks", [(1, 4), (1, 8), (2, 7), (3, 16)])
def test_elastic_sampler_pads_when_few_samples_are_left(monkeypatch, left, ranks):
    import hvd.torch.elastic.sampler as sampler_module
    monkeypatch.setattr(sampler_module, "size", lambda: ranks)
    shards = []
    for rank in range(ranks):
        monkeypatch.setattr(sampler_module, "rank", lambda rank=rank: rank)
        sampler = sampler_module.ElasticSampler(list(range(1024 + left)), shuffle=False)
        sampler.load_state_dict({"epoch": 0, "processed_num": 1024})
        shards.append((len(sampler), list(sampler)))
    assert all(n == 1 and len(got) == 1 for n, got in shards), shards
    assert sorted(set(sum((got for _, got in shards), []))) == list(range(1024, 1024 + left))


# A synced state is what a failure restores: a worker that joined restored its own initial
# model, optimizer and sampler next to rank 0's plain attributes (until 2026-12-01), and hvdrun
# counts it as holding the state once synced.
def test_run_restores_what_was_synced_not_the_initial_state(monkeypatch):
    monkeypatch.setenv("HVD_ELASTIC", "1")
    import hvd.elastic as common
    monkeypatch.setattr(common, "_driver_round", lambda: None)
    model = torch.nn.Linear(2, 1)
    sampler = hvd.elastic.ElasticSampler(list(range(10)), shuffle=False)
    state = hvd.elastic.TorchState(model, sampler=sampler, epoch=0)
    synced = torch.full_like(model.weight, 3.0)

    syncs = []

    def sync():
        # The first sync brings rank 0's state (this worker joined); in the next round the older
        # workers are gone, this one is rank 0, and its sync broadcasts what it holds.
        syncs.append(1)
        if len(syncs) == 1:
            with torch.no_grad():
                model.weight.copy_(synced)
            sampler.load_state_dict({"epoch": 4, "processed_num": 6})
            state.epoch = 4

    monkeypatch.setattr(state, "sync", sync)
    attempts = []

    @hvd.elastic.run
    def train(state):
        attempts.append((state.model.weight.detach().clone(), state.epoch,
                         state.sampler.state_dict()))
        if len(attempts) == 1:
            with torch.no_grad():
                model.weight.add_(1.0)
            state.epoch = 9
            raise hvd.HorovodInternalError("the peers are gone")
        return len(attempts)

    assert train(state) == 2
    weight, epoch, sampler_state = attempts[1]
    assert torch.equal(weight, synced) and epoch == 4
    assert sampler_state == {"epoch": 4, "processed_num": 6}


# The restored optimizer does not share its tensors with the saved copy (torch >= 2.1 keeps the
# tensors load_state_dict is given): a second failure restores the commit, not later steps.
def test_a_second_restore_brings_back_the_commit():
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    state = hvd.elastic.TorchState(model, optimizer)
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    state.commit()
    committed = {k: v.clone() for k, v in optimizer.state[model.weight].items()}
    for _ in range(2):
        state.restore()
        model(torch.ones(1, 2)).sum().backward()
        optimizer.step()
    state.restore()
    for key, value in optimizer.state[model.weight].items():
        assert torch.equal(value, committed[key]), key


def test_run_restores_and_reraises_without_elastic_driver(monkeypatch):
    monkeypatch.delenv("HVD_ELASTIC", raising=False)
    monkeypatch.delenv("HOROVOD_ELASTIC", raising=False)
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, step=0)

    @hvd.elastic.run
    def train(state):
        state.step = 5
        raise hvd.HorovodInternalError("peer died")

    with pytest.raises(hvd.HorovodInternalError, match="elastic driver: launch with hvdrun "
                       "--elastic, --min-np or --host-discovery-script"):
        train(state)
    assert state.step == 0


def test_run_retries_after_hosts_updated():
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, attempts=0)

    @hvd.elastic.run
    def train(state):
        state.attempts += 1
        if state.attempts == 1:
            state.save()
            raise hvd.HostsUpdatedInterrupt(skip_sync=True)
        return state.attempts

    assert train(state) == 2
    assert hvd.is_initialized()


# hvdrun's server not answering rank 0's host-update question in commit() is said once and
# training goes on. Until 2026-12-02 the error escaped commit() on rank 0 alone, ending it while
# the other ranks waited in the commit's broadcast.
def test_a_host_update_question_hvdrun_does_not_answer_is_said_once(monkeypatch, capsys):
    import hvd.elastic as common
    from hvd import _hvd_c
    monkeypatch.setattr(common, "_driver_worker", lambda: True)

    def unanswered():
        raise _hvd_c.Error("lost hvdrun's server")

    monkeypatch.setattr(_hvd_c, "elastic_host_update", unanswered)
    monkeypatch.setattr(common, "_host_update_warned", False, raising=False)
    state = common.ObjectState(lambda obj: obj, lambda: 0, epoch=1)
    state.commit()
    state.commit()
    err = capsys.readouterr().err
    assert err.count("could not ask hvdrun for host updates: lost hvdrun's server") == 1, err


# A reset callback whose collective lost a peer (HorovodInternalError) gets another reset, as a
# failure in training does. Until 2026-12-02 the error escaped run() and ended the worker.
def test_a_reset_callback_that_loses_a_peer_gets_another_reset(monkeypatch):
    monkeypatch.setenv("HVD_ELASTIC", "1")
    import hvd.elastic as common
    monkeypatch.setattr(common, "_driver_round", lambda: None)
    state = hvd.elastic.TorchState(torch.nn.Linear(2, 1), epoch=0)
    monkeypatch.setattr(state, "sync", lambda: None)
    callbacks = []

    def callback():
        callbacks.append(1)
        if len(callbacks) == 1:
            raise hvd.HorovodInternalError("a peer died during the callback's allreduce")

    state.register_reset_callbacks([callback])
    attempts = []

    @hvd.elastic.run
    def train(state):
        attempts.append(1)
        if len(attempts) == 1:
            raise hvd.HorovodInternalError("the peers are gone")
        return "done"

    assert train(state) == "done"
    assert len(callbacks) == 2 and len(attempts) == 2
