"""hvd.torch's op=Adasum (docs/python.md "Adasum"): allreduce against a reference tree computed
here from every rank's input, its properties, joined ranks, process sets and
DistributedOptimizer(op=Adasum). Runs at any size, as test_torch.py.
"""
import warnings

import pytest
import torch

from test_torch import FLOATS, assert_close


def adasum_pair(a, b):
    dot, a_norm, b_norm = float((a * b).sum()), float((a * a).sum()), float((b * b).sum())
    a_coeff = 1.0 - dot / (2.0 * a_norm) if a_norm >= 1e-8 else 1.0
    b_coeff = 1.0 - dot / (2.0 * b_norm) if b_norm >= 1e-8 else 1.0
    return a_coeff * a + b_coeff * b


def adasum_expected(tensors):
    """hvd's Adasum over the ranks' tensors (docs/python.md "Adasum"): pairs at distance 1, 2,
    4, ... (Horovod's recursive doubling); with a size that is not a power of two the last one
    of an odd count is carried up a level."""
    v = [t.to(torch.float64) for t in tensors]
    d = 1
    while d < len(v):
        for k in range(0, len(v) - d, 2 * d):
            v[k] = adasum_pair(v[k], v[k + d])
        d *= 2
    return v[0]


def adasum_input(dtype, rank, shape=(4, 6)):
    n = int(torch.tensor(shape).prod())
    return torch.sin(torch.arange(n, dtype=torch.float64) * (rank + 1) + rank).reshape(shape).to(dtype)


def assert_same_on_every_rank(hvd, tensor):
    rows = hvd.allgather(tensor.reshape(1, -1))
    for r in range(hvd.size()):
        assert torch.equal(rows[r], rows[0]), f"rank {r}'s result differs from rank 0's"


@pytest.mark.parametrize("dtype", FLOATS)
def test_adasum_allreduce(hvd, dtype):
    inputs = [adasum_input(dtype, r) for r in range(hvd.size())]
    result = hvd.allreduce(inputs[hvd.rank()], op=hvd.Adasum, name=f"adasum.{dtype}")
    assert_close(result, adasum_expected(inputs), dtype)
    assert_same_on_every_rank(hvd, result)
    in_place = inputs[hvd.rank()].clone()
    hvd.synchronize(hvd.allreduce_async_(in_place, op=hvd.Adasum, name=f"adasum_.{dtype}"))
    assert torch.equal(in_place, result)
    empty = hvd.allreduce(torch.zeros(0, dtype=dtype), op=hvd.Adasum, name=f"adasum.empty.{dtype}")
    assert empty.shape == (0,) and empty.dtype == dtype


def test_adasum_combines_orthogonal_updates_and_keeps_parallel_ones(hvd):
    size, rank = hvd.size(), hvd.rank()
    one_hot = torch.zeros(size + 1)
    one_hot[rank] = rank + 1.0  # orthogonal across ranks: Adasum adds them
    assert torch.equal(hvd.allreduce(one_hot, op=hvd.Adasum, name="adasum.orthogonal"),
                       torch.tensor([r + 1.0 for r in range(size)] + [0.0]))
    same = torch.tensor([3.0, -1.0, 2.0])  # parallel and equal: Adasum keeps it
    torch.testing.assert_close(hvd.allreduce(same, op=hvd.Adasum, name="adasum.same"), same)
    lone = torch.tensor([1.0, 2.0]) if rank == 0 else torch.zeros(2)  # zeros are left out
    torch.testing.assert_close(hvd.allreduce(lone, op=hvd.Adasum, name="adasum.lone"),
                               torch.tensor([1.0, 2.0]))


def test_adasum_grouped_combines_each_tensor_and_scales(hvd):
    rank = hvd.rank()
    firsts = [adasum_input(torch.float32, r, (5,)) for r in range(hvd.size())]
    seconds = [adasum_input(torch.float32, r + 7, (3, 2)) for r in range(hvd.size())]
    out = hvd.grouped_allreduce([firsts[rank], seconds[rank]], op=hvd.Adasum,
                                name="adasum.grouped", prescale_factor=2.0,
                                postscale_factor=0.25)
    # Per tensor (not over their concatenation); Adasum of scaled inputs is the scaled result.
    assert_close(out[0], adasum_expected(firsts) * 0.5, torch.float32)
    assert_close(out[1], adasum_expected(seconds) * 0.5, torch.float32)


def test_adasum_refuses_integer_tensors_naming_the_tensor(hvd):
    with pytest.raises(ValueError, match="Adasum needs floating-point tensors .*not int32: 'allreduce.adasum.int'"):
        hvd.allreduce(torch.ones(3, dtype=torch.int32), op=hvd.Adasum, name="adasum.int")


def test_adasum_distributed_optimizer_applies_the_combined_updates(hvd):
    """op=Adasum combines each rank's update (here SGD's -lr * grad) with Adasum, and every
    rank ends each step with the same parameters: the ones before plus the combined update."""
    torch.manual_seed(0)
    model = torch.nn.ModuleDict({"used": torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(),
                                                             torch.nn.Linear(3, 1)),
                                 "unused": torch.nn.Linear(2, 2)})
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    lr = 0.1
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr),
                                         named_parameters=model.named_parameters(),
                                         op=hvd.Adasum)
    data = torch.Generator().manual_seed(100 + hvd.rank())
    for step in range(3):
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        optimizer.zero_grad()
        model["used"](torch.randn(5, 4, generator=data)).pow(2).sum().backward()
        grads = {n: (p.grad.clone() if p.grad is not None else torch.zeros_like(p))
                 for n, p in model.named_parameters()}
        optimizer.step()
        for n, p in model.named_parameters():
            every = hvd.allgather(grads[n].unsqueeze(0), name=f"adasum.grads.{step}.{n}")
            expected = before[n].to(torch.float64) + adasum_expected(
                [-lr * every[r] for r in range(hvd.size())])
            torch.testing.assert_close(p.detach().to(torch.float64), expected, rtol=1e-5,
                                       atol=1e-6, msg=f"step {step}, parameter {n}")
            assert_same_on_every_rank(hvd, p.detach())
        assert torch.equal(model["unused"].weight, before["unused.weight"])


@pytest.mark.parametrize("make", [
    lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=0.1),
    lambda params: torch.optim.Adam(params, lr=0.1, weight_decay=0.1)], ids=["sgd", "adam"])
def test_adasum_leaves_a_parameter_without_a_gradient_where_it_is(hvd, make):
    """A parameter no rank computed a gradient for (grad None) does not move: the wrapped
    optimizer skips it, as in Horovod's delta optimizer. Until 2026-12-01 hvd filled its gradient
    with zeros, and weight decay (and momentum, Adam's moments) moved it anyway."""
    torch.manual_seed(2)
    model = torch.nn.ModuleDict({"used": torch.nn.Linear(3, 1), "unused": torch.nn.Linear(2, 2)})
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = hvd.DistributedOptimizer(make(model.parameters()),
                                         named_parameters=model.named_parameters(),
                                         op=hvd.Adasum)
    before = model["unused"].weight.detach().clone()
    for _ in range(2):
        optimizer.zero_grad()
        model["used"](torch.ones(2, 3) * (hvd.rank() + 1)).sum().backward()
        optimizer.step()
    assert torch.equal(model["unused"].weight.detach(), before)
    assert model["unused"].weight.grad is None


def test_adasum_distributed_optimizer_step_is_recorded_and_hooked_once(hvd):
    # Adasum steps the wrapped optimizer once per parameter (in backward's hooks); torch's
    # wrapper of each optimizer class's step (profiler record, torch 2.x's step hooks) must
    # still run once a step, at DistributedOptimizer's step().
    if hvd.size() == 1:
        pytest.skip("op=Adasum at one rank is the plain optimizer")
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters(),
                                         op=hvd.Adasum)
    calls = []
    if hasattr(optimizer, "register_step_post_hook"):  # torch >= 2.0
        optimizer.register_step_pre_hook(lambda *args: calls.append("pre"))
        optimizer.register_step_post_hook(lambda *args: calls.append("post"))
    with torch.profiler.profile() as prof:
        model(torch.ones(2, 3)).sum().backward()
        optimizer.step()
    steps = [e.name for e in prof.events() if e.name.startswith("Optimizer.step#")]
    assert steps == ["Optimizer.step#SGD.step"], steps
    if hasattr(optimizer, "register_step_post_hook"):
        assert calls == ["pre", "post"], calls


def test_adasum_distributed_optimizer_with_momentum_keeps_ranks_together(hvd):
    torch.manual_seed(1)
    model = torch.nn.Linear(6, 2)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3),
        named_parameters=model.named_parameters(), op=hvd.Adasum, backward_passes_per_step=2)
    data = torch.Generator().manual_seed(200 + hvd.rank())
    target = torch.tensor([[1.0, -1.0]])
    losses = []
    for _ in range(15):
        optimizer.zero_grad()
        for _ in range(2):  # two backward passes per step, accumulated locally
            loss = (model(torch.randn(8, 6, generator=data)) - target).pow(2).mean()
            loss.backward()
        optimizer.step()
        losses.append(float(hvd.allreduce(loss.detach(), name="adasum.loss")))
        assert_same_on_every_rank(hvd, torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert losses[-1] < losses[0] * 0.5, losses


def test_join_with_adasum_leaves_the_joined_ranks_out(hvd):
    size, rank = hvd.size(), hvd.rank()
    # Rank r runs r + 1 Adasum allreduces, then joins; allreduce i combines ranks r >= i, the
    # joined ones contributing zeros, which Adasum leaves out.
    inputs = [adasum_input(torch.float32, r, (6,)) for r in range(size)]
    for i in range(rank + 1):
        got = hvd.allreduce(inputs[rank], op=hvd.Adasum, name=f"join.adasum.{i}")
        expected = adasum_expected([inputs[r] if r >= i else torch.zeros(6) for r in range(size)])
        assert_close(got, expected, torch.float32)
    hvd.join()
    hvd.barrier()


def test_adasum_in_a_process_set(hvd):
    if hvd.size() < 3:
        pytest.skip("needs a set smaller than the world")
    ps = hvd.add_process_set([0, 2])
    try:
        if hvd.rank() in (0, 2):
            inputs = {r: adasum_input(torch.float64, r, (4,)) for r in (0, 2)}
            got = hvd.allreduce(inputs[hvd.rank()], op=hvd.Adasum, name="ps.adasum",
                                process_set=ps)
            assert_close(got, adasum_expected([inputs[0], inputs[2]]), torch.float64)
    finally:
        hvd.remove_process_set(ps)


def test_adasum_distributed_optimizer_in_a_process_set(hvd):
    """With process_set=[0, 2] its members combine their SGD updates with Adasum and end each
    step equal; rank 1, outside the set, steps the plain optimizer on its own gradient."""
    if hvd.size() < 3:
        pytest.skip("needs a set smaller than the world")
    ps = hvd.add_process_set([0, 2])
    try:
        torch.manual_seed(2)
        model = torch.nn.Linear(4, 2)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        lr = 0.1
        optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr),
                                             named_parameters=model.named_parameters(),
                                             op=hvd.Adasum, process_set=ps)
        data = torch.Generator().manual_seed(300 + hvd.rank())
        member = hvd.rank() in (0, 2)
        errors = []
        for step in range(3):
            before = {n: p.detach().clone() for n, p in model.named_parameters()}
            optimizer.zero_grad()
            model(torch.randn(5, 4, generator=data)).pow(2).sum().backward()
            grads = {n: p.grad.clone() for n, p in model.named_parameters()}
            optimizer.step()
            for n, p in model.named_parameters():
                # Every rank's update, gathered over the whole world (rank 1's included).
                every = hvd.allgather((-lr * grads[n]).unsqueeze(0), name=f"ps.opt.{step}.{n}")
                if member:
                    expected = before[n].to(torch.float64) + adasum_expected([every[0], every[2]])
                else:
                    expected = before[n].to(torch.float64) + every[hvd.rank()].to(torch.float64)
                # (noted, not raised: every rank must make the same collectives to the end)
                if not torch.allclose(p.detach().to(torch.float64), expected, rtol=1e-5,
                                      atol=1e-6):
                    errors.append(f"step {step}, parameter {n}: {p.detach()} != {expected}")
            if member:
                rows = hvd.allgather(torch.cat([p.detach().flatten() for p in
                                                model.parameters()]).unsqueeze(0),
                                     name=f"ps.opt.same.{step}", process_set=ps)
                if not torch.equal(rows[0], rows[1]):
                    errors.append(f"step {step}: the set's members differ")
    finally:
        hvd.barrier()
        hvd.remove_process_set(ps)
    assert not errors, errors


def test_adasum_synchronize_then_step_applies_the_update_once(hvd):
    """Horovod's Adasum optimizer does nothing in synchronize(): the gradient-clipping pattern
    (synchronize(), clip, step()) must step each parameter once. hvd's used to apply the
    combined updates in synchronize(), and the step() after it stepped every parameter again
    with the same gradient (w 1 -> 0.8 instead of 0.9). skip_synchronize() raises, as
    Horovod's does (the hooks have replaced each parameter by its update until step())."""
    if hvd.size() == 1:
        pytest.skip("op=Adasum at one rank is the plain optimizer, as in Horovod")
    weights = {}
    for pattern in ("step", "synchronize then step"):
        w = torch.nn.Parameter(torch.ones(2))
        optimizer = hvd.DistributedOptimizer(torch.optim.SGD([w], lr=0.1),
                                             named_parameters=[(f"w.{pattern}", w)], op=hvd.Adasum)
        w.sum().backward()
        if pattern != "step":
            optimizer.synchronize()
            torch.nn.utils.clip_grad_norm_([w], 10.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "step() called without skip_synchronize()"
            optimizer.step()
        weights[pattern] = w.detach().clone()
    torch.testing.assert_close(weights["step"], torch.full((2,), 0.9))
    torch.testing.assert_close(weights["synchronize then step"], torch.full((2,), 0.9))
    with pytest.raises(AssertionError, match="Skipping synchronization is not supported"):
        with optimizer.skip_synchronize():
            pass
