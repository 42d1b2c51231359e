"""hvd.torch's DistributedOptimizer (Horovod's horovod.torch.optimizer): results equal to one
process training on the whole batch, gradient accumulation and groups, torch's own zero_grad and
step wrappers kept as the wrapped optimizer has them, bad arguments, pending handles.

Run like test_torch.py: alone (size 1) and under hvdrun (test/python/CMakeLists.txt).
"""
import gc
import time

import pytest
import torch

from test_torch import _assert_same_on_all_ranks


def _regression_data(total, seed=7):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(total, 4, generator=generator)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1
    return x, y


def _train(hvd, distributed, steps, batch, passes=1, groups=None, optimizer_cls=torch.optim.SGD):
    """Returns the parameters after `steps` steps; distributed uses hvd with each rank taking
    its shard of every global batch, the reference trains on the whole global batch alone."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1))
    optimizer = optimizer_cls(model.parameters(), lr=0.05)
    size, rank = hvd.size(), hvd.rank()
    if distributed:
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                             backward_passes_per_step=passes, groups=groups)
    x, y = _regression_data(steps * passes * batch * size)
    history = []
    for step in range(steps):
        optimizer.zero_grad()
        for micro in range(passes):
            start = ((step * passes) + micro) * batch * size
            if distributed:
                xs = x[start + rank * batch:start + (rank + 1) * batch]
                ys = y[start + rank * batch:start + (rank + 1) * batch]
            else:
                xs, ys = x[start:start + batch * size], y[start:start + batch * size]
            torch.nn.functional.mse_loss(model(xs), ys).backward()
        optimizer.step()
        if distributed:
            _assert_same_on_all_ranks(hvd, list(model.parameters()))
        history.append([p.detach().clone() for p in model.parameters()])
    return history


@pytest.mark.parametrize("passes,groups", [(1, None), (2, None), (1, 2)])
def test_distributed_optimizer_matches_single_process_large_batch(hvd, passes, groups):
    distributed = _train(hvd, True, steps=5, batch=4, passes=passes, groups=groups)
    reference = _train(hvd, False, steps=5, batch=4, passes=passes)
    for got_step, want_step in zip(distributed, reference):
        for got, want in zip(got_step, want_step):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


class _NoneByDefaultSGD(torch.optim.SGD):
    """SGD whose zero_grad() sets gradients to None, as every optimizer's does on torch >= 2.0
    (torch 1.13, here, zeroes them)."""

    def zero_grad(self, set_to_none: bool = True):
        return super().zero_grad(set_to_none)


def test_distributed_optimizer_zero_grad_keeps_the_wrapped_optimizers_default(hvd):
    # Given wrapped optimizers whose own zero_grad() zeroes (torch 1.x SGD) or drops (torch 2.x)
    # the gradients,
    for cls in (torch.optim.SGD, _NoneByDefaultSGD):
        model = torch.nn.Linear(3, 2)
        plain = cls(model.parameters(), lr=0.1)
        wrapped = hvd.DistributedOptimizer(cls(model.parameters(), lr=0.1),
                                           named_parameters=model.named_parameters())
        for optimizer in (plain, wrapped):
            model(torch.ones(2, 3)).sum().backward()
            wrapped.synchronize()  # (at size > 1 the hooks started allreduces)
            with wrapped.skip_synchronize():
                optimizer.step()
            # when a bare zero_grad() is called, the wrapped one does what the plain one does:
            optimizer.zero_grad()
            got = [p.grad for p in model.parameters()]
            if cls is _NoneByDefaultSGD:
                assert got == [None, None], (cls.__name__, optimizer)
            else:
                assert all(g is not None and not g.any() for g in got), (cls.__name__, optimizer)
        # and an explicit argument, positional or named, still goes through.
        model(torch.ones(2, 3)).sum().backward()
        wrapped.step()
        wrapped.zero_grad(False)
        assert all(p.grad is not None and not p.grad.any() for p in model.parameters())
        model(torch.ones(2, 3)).sum().backward()
        wrapped.step()
        wrapped.zero_grad(set_to_none=True)
        assert all(p.grad is None for p in model.parameters())


def test_distributed_optimizer_step_is_recorded_and_hooked_once(hvd):
    # torch wraps each optimizer class's step (profiler record_function, torch 2.x's step hooks):
    # the wrapped optimizer's step is wrapped already, DistributedOptimizer's must not be again.
    model = torch.nn.Linear(3, 1)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    calls = []
    if hasattr(optimizer, "register_step_post_hook"):  # torch >= 2.0
        optimizer.register_step_pre_hook(lambda *args: calls.append("pre"))
        optimizer.register_step_post_hook(lambda *args: calls.append("post"))
    model(torch.ones(2, 3)).sum().backward()
    with torch.profiler.profile() as prof:
        optimizer.step()
    steps = [e.name for e in prof.events() if e.name.startswith("Optimizer.step#")]
    assert steps == ["Optimizer.step#SGD.step"], steps
    if hasattr(optimizer, "register_step_post_hook"):
        assert calls == ["pre", "post"], calls


@pytest.mark.parametrize("passes,groups", [(1, None), (2, None), (1, 2)])
def test_distributed_optimizer_with_gradients_set_to_none_matches_single_process(hvd, passes,
                                                                                 groups):
    # Each step's backward starts from gradients that are None (torch 2.x's zero_grad()).
    distributed = _train(hvd, True, steps=5, batch=4, passes=passes, groups=groups,
                         optimizer_cls=_NoneByDefaultSGD)
    reference = _train(hvd, False, steps=5, batch=4, passes=passes,
                       optimizer_cls=_NoneByDefaultSGD)
    for got_step, want_step in zip(distributed, reference):
        for got, want in zip(got_step, want_step):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


# The constructor runs no collective with groups= (Horovod's broadcasts rank 0's parameter order
# there): a worker joining an elastic job builds its optimizer while its peers are in their state
# sync, and until 2026-12-02 the two stalled until the stall shutdown. Here rank 0 builds one
# alone, in a thread given 10 s; then every rank trains with groups as usual.
def test_distributed_optimizer_with_groups_runs_no_collective_when_built(hvd):
    import threading
    built = []
    if hvd.rank() == 0:
        model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Linear(6, 1))
        thread = threading.Thread(target=lambda: built.append(hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1),
            named_parameters=model.named_parameters(), groups=2)), daemon=True)
        thread.start()
        thread.join(10)
        assert built, "DistributedOptimizer(groups=2) waited for the other ranks"
    history = _train(hvd, True, steps=2, batch=2, groups=2)
    reference = _train(hvd, False, steps=2, batch=2)
    for got, want in zip(history[-1], reference[-1]):
        assert torch.allclose(got, want, atol=1e-5)


def test_distributed_optimizer_list_groups_and_adam(hvd):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Linear(6, 1))
    params = list(model.parameters())
    optimizer = hvd.DistributedOptimizer(torch.optim.Adam(params, lr=0.01),
                                         named_parameters=model.named_parameters(),
                                         groups=[params[:2], params[2:]])
    assert isinstance(optimizer, torch.optim.Adam)
    x, y = _regression_data(8 * hvd.size(), seed=hvd.rank())
    for _ in range(3):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        _assert_same_on_all_ranks(hvd, params)


def test_distributed_optimizer_synchronize_and_skip(hvd):
    model = torch.nn.Linear(3, 1)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    model(torch.ones(2, 3) * (hvd.rank() + 1)).sum().backward()
    optimizer.synchronize()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    with optimizer.skip_synchronize():
        optimizer.step()
    _assert_same_on_all_ranks(hvd, list(model.parameters()))


def test_distributed_optimizer_argument_errors(hvd):
    model = torch.nn.Linear(3, 1)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="unique"):
        hvd.DistributedOptimizer(sgd, named_parameters=[("w", model.weight), ("w", model.bias)])
    with pytest.raises(ValueError, match="not named"):
        hvd.DistributedOptimizer(sgd, named_parameters=[("w", model.weight)])
    with pytest.raises(ValueError, match="tuples"):
        hvd.DistributedOptimizer(sgd, named_parameters=[model.weight, model.bias])
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(sgd, op=hvd.Sum, gradient_predivide_factor=2.0)


def test_distributed_optimizer_zero_grad_with_pending_handles(hvd):
    if hvd.size() == 1:
        pytest.skip("at size 1 no gradient hooks are registered")
    model = torch.nn.Linear(3, 1)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    model(torch.ones(2, 3)).sum().backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        optimizer.zero_grad()
    optimizer.step()
    optimizer.zero_grad()


def test_dropped_optimizer_with_pending_handles_frees_its_gradients_names(hvd):
    # Given an optimizer dropped between backward and step (its zero_grad raised, the script
    # starts over with a new model and optimizer under the same parameter names),
    if hvd.size() == 1:
        pytest.skip("at size 1 no gradient hooks are registered")

    def fresh():
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        return model, hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                               named_parameters=model.named_parameters())

    model, optimizer = fresh()
    model(torch.ones(2, 3)).sum().backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        optimizer.zero_grad()
    for handle, _ in optimizer._handles.values():  # the allreduces complete, unsynchronized
        while not hvd.poll(handle):
            time.sleep(0.001)
    del model, optimizer
    gc.collect()
    # then the new one trains (its names were still reserved by the unsynchronized handles).
    model, optimizer = fresh()
    model(torch.ones(2, 3)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()


def test_distributed_optimizer_predivide_and_sparse_as_dense(hvd):
    torch.manual_seed(3)
    embedding = torch.nn.Embedding(10, 3, sparse=True)
    hvd.broadcast_parameters(embedding.state_dict(), root_rank=0)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(embedding.parameters(), lr=0.5),
                                         named_parameters=embedding.named_parameters(),
                                         sparse_as_dense=True, gradient_predivide_factor=2.0)
    embedding(torch.tensor([hvd.rank() % 10, 3])).sum().backward()
    optimizer.step()
    _assert_same_on_all_ranks(hvd, [embedding.weight])


def test_a_group_left_incomplete_counts_again_from_the_next_step(hvd):
    # groups=[[a, b]] with two passes per step, b unused in the second pass of the first step:
    # the group never completed there, its members were reduced one by one. The next step's
    # group must fire once both have their gradients (one grouped allreduce), not at a's last
    # hook, in place while b's second pass still adds into b.grad (its count was left at 1,
    # Horovod's synchronize() resets it).
    if hvd.size() == 1:
        pytest.skip("one rank registers no hooks (as Horovod): there are no groups to fire")
    r = hvd.rank()
    a = torch.nn.Parameter(torch.ones(3))
    b = torch.nn.Parameter(torch.ones(3))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD([a, b], lr=0.0),
                                         named_parameters=[("group.a", a), ("group.b", b)],
                                         groups=[[a, b]], backward_passes_per_step=2)
    mean = sum(range(1, hvd.size() + 1)) / hvd.size()
    for step, b_in_second_pass in enumerate([False, True, True]):
        optimizer.zero_grad()
        for k in range(2):
            loss = (a * (r + 1)).sum()
            if k == 0 or b_in_second_pass:
                loss = loss + (b * (r + 1)).sum()
            loss.backward()
        if step > 0:
            assert list(optimizer._handles) == [(a, b)], f"step {step}"
        optimizer.step()
        passes_of_b = 2 if b_in_second_pass else 1
        assert torch.allclose(a.grad, torch.full((3,), 2 * mean)), f"step {step}"
        assert torch.allclose(b.grad, torch.full((3,), passes_of_b * mean)), f"step {step}"


def test_a_group_half_counted_when_backward_failed_counts_again_after_a_restore(hvd):
    # groups=[[a, b]]: backward raises after a's hook ran (a peer died, or user code failed),
    # the group is left at 1. An elastic restore loads the optimizer's state; the next step's
    # group must fire once both gradients are ready (it fired at a's hook, with b's gradient
    # not computed yet: a TypeError on torch 2, stale values on torch 1.x; until 2026-12-01).
    if hvd.size() == 1:
        pytest.skip("one rank registers no hooks (as Horovod): there are no groups to fire")

    class Fails(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            raise RuntimeError("backward failed")

    r = hvd.rank()
    a = torch.nn.Parameter(torch.ones(3))
    b = torch.nn.Parameter(torch.ones(3))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD([a, b], lr=0.0),
                                         named_parameters=[("group.a", a), ("group.b", b)],
                                         groups=[[a, b]])
    with pytest.raises(RuntimeError, match="backward failed"):
        (Fails.apply(b * (r + 1)) * a).sum().backward()  # a's gradient first, then the raise
    assert optimizer._group_counts[(a, b)] == 1
    optimizer.load_state_dict(optimizer.state_dict())  # what TorchState.restore() does
    optimizer.zero_grad()
    ((a * (r + 1)).sum() + (b * (r + 1)).sum()).backward()
    assert list(optimizer._handles) == [(a, b)]
    optimizer.step()
    mean = sum(range(1, hvd.size() + 1)) / hvd.size()
    assert torch.allclose(a.grad, torch.full((3,), mean))
    assert torch.allclose(b.grad, torch.full((3,), mean))
