"""hvd.torch on CUDA tensors (ctest label gpu): every collective gives on the GPU what it gives
on the CPU, at -np 1 (NCCL), -np 2/4 on one GPU (staged through host memory) and -np 2/4 with
each rank its own host (NCCL on the one GPU: python_gpu_nccl_np*), with the framework's stream
order kept. Skips (exit 77) with the reason when no GPU is visible or the
build has no GPU path.
"""
import functools
import os
import re
import socket
import subprocess
import sys
import time

import pytest
import torch

if not torch.cuda.is_available():
    pytest.skip("no CUDA device visible (torch.cuda.is_available() is False)",
                allow_module_level=True)

DTYPES = [torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def g(hvd):
    if not hvd.cuda_built():
        pytest.skip("this hvd was built without the GPU path (hvdrun -cb shows no NCCL)")
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    return hvd


def make(dtype, shape, rank, offset=0):
    base = (torch.arange(int(torch.tensor(shape).prod())) + offset) % 3 + 1 + rank
    return base.to(dtype).reshape(shape)


def same(gpu, cpu):
    assert gpu.is_cuda and gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
    tol = {torch.float16: 1e-2, torch.bfloat16: 5e-2}.get(cpu.dtype, 1e-6)
    torch.testing.assert_close(gpu.cpu().to(torch.float64), cpu.to(torch.float64), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["Sum", "Min", "Max", "Product", "Average"])
def test_allreduce_matches_cpu(g, dtype, op):
    if op == "Average" and dtype not in FLOATS:
        pytest.skip("Average of integers truncates differently by design")
    x = make(dtype, (3, 5), g.rank())
    cpu = g.allreduce(x, op=getattr(g, op), name=f"cpu.{dtype}.{op}")
    gpu = g.allreduce(x.cuda(), op=getattr(g, op), name=f"gpu.{dtype}.{op}")
    same(gpu, cpu)


@pytest.mark.parametrize("dtype", FLOATS)
def test_adasum_matches_cpu(g, dtype):
    # Staged (and at one rank per host) CUDA tensors combine as on the CPU. On NCCL over hosts of
    # several ranks (python_gpu_hierarchical_np4) it is Horovod's GPU Adasum: each host's average
    # on NCCL, then Adasum across hosts -- the CPU's Adasum of every rank's host average (Adasum
    # of equal vectors is that vector).
    x = torch.sin(torch.arange(15, dtype=torch.float64) * (g.rank() + 1)).reshape(3, 5).to(dtype)
    ref = x
    if _nccl(g) and g.local_size() > 1 and g.cross_size() > 1:
        every = g.allgather(x.unsqueeze(0).double(), name=f"adasum.inputs.{dtype}")
        first = g.rank() // g.local_size() * g.local_size()
        ref = every[first:first + g.local_size()].mean(0).to(dtype)
    cpu = g.allreduce(ref, op=g.Adasum, name=f"cpu.adasum.{dtype}")
    gpu = g.allreduce(x.cuda(), op=g.Adasum, name=f"gpu.adasum.{dtype}")
    same(gpu, cpu)


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32])
def test_allreduce_scale_factors_match_cpu(g, dtype):
    x = make(dtype, (64,), g.rank())
    kw = dict(prescale_factor=0.5, postscale_factor=3.0)
    for op in (g.Sum, g.Average):
        cpu = g.allreduce(x, op=op, **kw)
        gpu = g.allreduce(x.cuda(), op=op, **kw)
        same(gpu, cpu)


@pytest.mark.parametrize("count", [1, 7, 17 ** 3, 4099, 65537])
@pytest.mark.parametrize("dtype", FLOATS)
def test_scaled_allreduce_writes_every_element(g, count, dtype):
    # 17^3 float32 with a prescale came back with its last element 0 at one rank (NCCL's
    # one-rank pre-multiplied sum): odd and prime counts, every float dtype, pre- and postscale
    # and Average, one tensor and a fused pair.
    x = make(dtype, (count,), g.rank())
    for op, kw in ((g.Sum, dict(prescale_factor=0.5)), (g.Sum, dict(postscale_factor=3.0)),
                   (g.Average, dict(prescale_factor=2.0, postscale_factor=0.25)),
                   (g.Average, {})):
        cpu = g.allreduce(x, op=op, **kw)
        same(g.allreduce(x.cuda(), op=op, **kw), cpu)
        pair = g.grouped_allreduce([x.cuda(), x[:count // 2 + 1].cuda()], op=op, **kw)
        same(pair[0], cpu)
        same(pair[1], g.allreduce(x[:count // 2 + 1], op=op, **kw))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_scaled_results_are_horovods_bit_for_bit(g, dtype):
    # Horovod's test_horovod_allreduce_average / _postscale / _prescale: the same integers on
    # every rank, exact at up to 3 ranks (threshold 0), 1e-4 below 10. Horovod sums and then
    # scales (postscale, Average's 1/n) in a kernel of its own; one factor folded into NCCL's
    # pre-multiplied sum gave 100.0000076 for float32's average of 100 at 3 ranks.
    torch.manual_seed(1234)
    x = torch.FloatTensor(17, 17, 17).random_(-100, 100).to(dtype).cuda()
    factor = 0.6180339887498949
    f = torch.tensor(factor, dtype=dtype, device="cuda")
    n = g.size()
    checks = [
        ("average", g.allreduce(x, op=g.Average, name=f"hvd.avg.{dtype}"), x),
        ("postscale", g.allreduce(x, op=g.Sum, postscale_factor=factor, name=f"hvd.post.{dtype}"),
         (x * n) * f),
        ("prescale", g.allreduce(x, op=g.Sum, prescale_factor=factor, name=f"hvd.pre.{dtype}"),
         (x * f) * n),
    ]
    for what, got, want in checks:
        if n <= 3:
            assert torch.equal(got, want), (what, (got - want).abs().max().item())
        else:  # NCCL's order of the sum is its own beyond 3 ranks: a few units in the last place
            rel = {torch.float16: 2e-3, torch.float32: 1e-6, torch.float64: 1e-12}[dtype]
            tol = rel * want.double().abs().max().item()
            assert (got.double() - want.double()).abs().max().item() <= tol, what


def test_reducescatter_float16_scaled_as_horovods_gpu_path(g):
    # Horovod scales a CUDA float16 in half: the factor rounded to half, the product rounded.
    x = (torch.arange(4 * g.size() * 3, dtype=torch.float32) % 23 + 1).reshape(4 * g.size(), 3)
    factor = 0.1
    half = x.half().cuda()
    rows = slice(g.rank() * 4, (g.rank() + 1) * 4)
    expected = (half[rows] * torch.tensor(factor, dtype=torch.float16, device="cuda")) * g.size()
    results = [g.reducescatter(half, op=g.Sum, prescale_factor=factor)]
    results += g.grouped_reducescatter([half, half], op=g.Sum, prescale_factor=factor)
    for got in results:
        if g.size() <= 3:  # exact, as Horovod's test asks up to 3 ranks
            assert torch.equal(got, expected), (got, expected)
        else:
            same(got, expected.cpu())


def test_grouped_op_of_cpu_and_cuda_tensors_is_refused_and_nothing_breaks(g):
    tensors = [torch.ones(10) if i % 2 else torch.ones(10, device="cuda") for i in range(5)]
    for op in (g.grouped_allreduce, g.grouped_allgather, g.grouped_reducescatter):
        with pytest.raises(RuntimeError, match="must be on one device"):
            op(tensors)
    # torch's next CUDA call and hvd's next op work: no CUDA error was left pending
    assert torch.ones(3).cuda().sum().item() == 3
    out = g.allreduce(torch.ones(3, device="cuda"), op=g.Sum, name="after.mixed")
    assert out.is_cuda and torch.all(out == g.size()).item()


@pytest.mark.parametrize("tensor_on,splits_as,received_on", [
    ("cuda", "list", "cuda"),    # a list: the tensor's device
    ("cuda", "cuda", "cuda"),    # a splits tensor: its device, as Horovod's splits.new()
    ("cpu", "cuda", "cuda"),     # Horovod's test_horovod_alltoall_splits_on_gpu
    ("cuda", "cpu", "cpu"),
])
def test_alltoall_received_splits_on_the_splits_or_the_tensors_device(g, tensor_on, splits_as,
                                                                     received_on):
    rows = torch.arange(2 * g.size(), dtype=torch.float32, device=tensor_on)
    splits = [2] * g.size()
    if splits_as != "list":
        splits = torch.tensor(splits, dtype=torch.int32, device=splits_as)
    for grad in (False, True):  # the plain call, and the autograd one (HorovodAlltoall)
        out, received = g.alltoall(rows.clone().requires_grad_(grad), splits=splits)
        assert out.device.type == tensor_on and received.device.type == received_on
        assert received.dtype == torch.int32 and received.tolist() == [2] * g.size()


def test_sync_batch_norm_takes_one_value_per_channel_on_gpu(g):
    bn = g.SyncBatchNorm(4).cuda()
    x = torch.arange(4, dtype=torch.float32, device="cuda").reshape(1, 4, 1) + g.rank()
    out = bn(x.requires_grad_())
    out.sum().backward()
    assert out.shape == x.shape and torch.isfinite(out).all().item()
    assert torch.isfinite(bn.running_var).all().item()


def test_large_allreduce_in_place_is_chunked_and_exact(g):
    # 24 MiB: the staged path pipelines it in chunks; every element must come back.
    n = 6 << 20
    x = torch.arange(n, dtype=torch.float32, device="cuda") % 97 + g.rank()
    g.allreduce_(x, op=g.Sum, name="big")
    expected = (torch.arange(n, dtype=torch.float64) % 97) * g.size() + sum(range(g.size()))
    torch.testing.assert_close(x.cpu().to(torch.float64), expected)


def test_grouped_and_fused_allreduce(g):
    xs = [make(torch.float32, (s,), g.rank(), s) for s in (1, 7, 1000, 33)]
    cpu = g.grouped_allreduce(xs, op=g.Sum)
    gpu = g.grouped_allreduce([x.cuda() for x in xs], op=g.Sum)
    for a, b in zip(gpu, cpu):
        same(a, b)
    handles = [g.allreduce_async(x.cuda(), op=g.Sum, name=f"fused.{i}") for i, x in enumerate(xs)]
    for h, b in zip(handles, cpu):
        same(g.synchronize(h), b)


def test_stream_order_is_kept(g):
    # The input is written by work queued on a side stream and not finished when allreduce is
    # called: the runtime must wait for that stream's event, not read stale memory.
    side = torch.cuda.Stream()
    a = torch.randn(2048, 2048, device="cuda")
    with torch.cuda.stream(side):
        x = torch.zeros(1 << 20, device="cuda")
        for _ in range(20):
            a = a @ a / 2048.0
        x.add_(1.0 + g.rank())
        out = g.allreduce(x, op=g.Sum, name="ordered")
    side.synchronize()
    assert torch.all(out == float(sum(r + 1 for r in range(g.size())))).item()


def test_collectives_stay_right_while_the_stack_is_asked_for(g, capfd):
    # hvdrun's stack request (HVD_STACK_SIGNAL, on SIGQUIT or a stall) may land on any thread:
    # NCCL's and CUDA's own among them. A thread here asks for this rank's stack every 5 ms
    # while CUDA collectives run: every result must still be right.
    import threading
    signo = int(os.environ.get("HVD_STACK_SIGNAL", "0"))
    if signo <= 0:
        pytest.skip("not started by hvdrun (no HVD_STACK_SIGNAL)")
    done = threading.Event()
    sent = []

    def ask():
        while not done.wait(0.005):
            os.kill(os.getpid(), signo)
            sent.append(1)

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        for i in range(200):
            n = [1, 1000, 1 << 18][i % 3]
            total = g.allreduce(torch.full((n,), float(g.rank() + 1), device="cuda"), op=g.Sum,
                                name=f"stacks.{i % 6}")
            assert torch.all(total == g.size() * (g.size() + 1) / 2).item(), i
            gathered = g.allgather(torch.tensor([g.rank()], device="cuda"), name="stacks.g")
            assert gathered.tolist() == list(range(g.size())), i
    finally:
        done.set()
        asker.join()
    err = capfd.readouterr().err
    # hvd runs the dump on the main thread: every thread's ("Current thread"), or the main
    # thread's alone ("Stack") when the GIL was free (python/src/stack_dump.h).
    assert sent and err.count("Current thread") + err.count("Stack (most recent call first)") > 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_allgather_broadcast_alltoall_match_cpu(g, dtype):
    x = make(dtype, (g.rank() + 1, 3), g.rank())
    same(g.allgather(x.cuda()), g.allgather(x))
    y = make(dtype, (4, 2), g.rank())
    root = g.size() - 1
    same(g.broadcast(y.cuda(), root), g.broadcast(y, root))
    z = y.cuda()
    g.broadcast_(z, 0)
    same(z, g.broadcast(y, 0))
    rows = torch.cat([make(dtype, (g.size(), 2), g.rank())])
    same(g.alltoall(rows.cuda()), g.alltoall(rows))


def test_reducescatter_and_grouped_match_cpu(g):
    x = make(torch.float32, (2 * g.size() + 1, 3), g.rank())
    for op in (g.Sum, g.Average):
        same(g.reducescatter(x.cuda(), op=op), g.reducescatter(x, op=op))
    xs = [x, make(torch.float32, (g.size(), 2), g.rank())]
    for a, b in zip(g.grouped_reducescatter([t.cuda() for t in xs], op=g.Sum),
                    g.grouped_reducescatter(xs, op=g.Sum)):
        same(a, b)
    for a, b in zip(g.grouped_allgather([t.cuda() for t in xs]), g.grouped_allgather(xs)):
        same(a, b)


def test_process_set_on_gpu(g):
    if g.size() < 2:
        pytest.skip("needs 2 ranks")
    ps = g.add_process_set(list(range(1, g.size())))  # not the global set
    if ps.included():
        x = make(torch.float32, (10,), g.rank())
        same(g.allreduce(x.cuda(), op=g.Sum, process_set=ps), g.allreduce(x, op=g.Sum,
                                                                           process_set=ps))
    g.remove_process_set(ps)


# ---- autograd, join and barrier on CUDA tensors (Horovod's suite runs its *_grad and join
# tests on CUDA tensors too) --------------------------------------------------------------------

def _grads(g, device, dtype):
    """Leaf gradients of every differentiable collective on `device`, each backward fed a
    rank-dependent upstream gradient so the reduction of the gradient shows."""
    size, rank = g.size(), g.rank()
    seed = make(dtype, (2 * size, 3), rank)
    grads = []

    def leaf(t):
        return t.detach().clone().to(device).requires_grad_()

    def back(out, x):
        up = make(dtype, tuple(out.shape), rank, offset=1).to(device)
        out.backward(up)
        grads.append(x.grad.detach().cpu())

    for op in (g.Sum, g.Average):
        x = leaf(seed)
        back(g.allreduce(x, op=op, name=f"grad.ar.{op}.{device}"), x)
        x = leaf(seed)
        back(g.reducescatter(x, op=op, name=f"grad.rs.{op}.{device}"), x)
    x = leaf(seed[:rank + 1])  # uneven first dimensions
    back(g.allgather(x, name=f"grad.ag.{device}"), x)
    x = leaf(seed[:4])
    back(g.broadcast(x, size - 1, name=f"grad.bc.{device}"), x)
    x = leaf(seed)
    back(g.alltoall(x, name=f"grad.a2a.{device}"), x)
    xs = [leaf(seed), leaf(seed[:1])]
    outs = g.grouped_allreduce(xs, op=g.Sum, name=f"grad.gar.{device}")
    torch.autograd.backward(outs, [make(dtype, tuple(o.shape), rank, 1).to(device) for o in outs])
    grads += [x.grad.detach().cpu() for x in xs]
    return grads


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_of_every_collective_on_gpu_match_cpu(g, dtype):
    gpu, cpu = _grads(g, "cuda", dtype), _grads(g, "cpu", dtype)
    assert len(gpu) == len(cpu) == 9
    for a, b in zip(gpu, cpu):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_join_on_gpu_contributes_zeros(g, dtype):
    size, rank = g.size(), g.rank()
    # Rank r runs r + 1 allreduces of CUDA tensors, then joins with its device (Horovod's
    # hvd.join(hvd.local_rank())); allreduce i is summed over the ranks r >= i, the joined
    # ones contributing zeros.
    for i in range(rank + 1):
        got = g.allreduce(torch.full((5,), i + 1, dtype=dtype, device="cuda"), op=g.Sum,
                          name=f"join.gpu.{dtype}.{i}")
        assert got.is_cuda and got.dtype == dtype
        assert torch.equal(got.cpu(), torch.full((5,), (i + 1) * (size - i), dtype=dtype))
    last = g.join(torch.cuda.current_device())
    assert 0 <= last < size
    g.barrier()
    # hvd and torch go on as before
    out = g.allreduce(torch.ones(3, device="cuda"), op=g.Sum, name=f"after.join.{dtype}")
    assert torch.equal(out.cpu(), torch.full((3,), float(size)))


# ---- allgather, reducescatter and alltoall on NCCL (device outputs) ----------------------------

@functools.cache  # a property of the job: one allgather, at the first call (on every rank)
def _nccl(g):
    """Whether this job's global set runs on NCCL: no two ranks on one GPU of one machine (hvd's
    rule, docs/gpu.md: a rank's machine is the NCCL_HOSTID it declares, else its host name):
    -np 1, python_gpu_nccl_np* (each rank its own host), python_gpu_hierarchical_np4 (each rank
    its own NCCL_HOSTID)."""
    me = (os.environ.get("NCCL_HOSTID") or socket.gethostname(), torch.cuda.current_device())
    every = g.allgather_object(me)
    return len(set(every)) == len(every)


@pytest.mark.parametrize("dtype", DTYPES + [torch.int16, torch.bool])
def test_uneven_allgather_and_alltoall_match_cpu(g, dtype):
    # Ranks give 1, 0, 2, 1, ... rows: uneven (the NCCL group's grouped broadcasts), one empty.
    x = make(dtype, ((g.rank() * 2 + 1) % 3, 3), g.rank())
    same(g.allgather(x.cuda(), name=f"gpu.ag.{dtype}"), g.allgather(x, name=f"cpu.ag.{dtype}"))
    xs = [x, make(dtype, (g.rank() + 1,), g.rank(), 1), make(dtype, (2, 2, 2), g.rank(), 2)]
    for a, b in zip(g.grouped_allgather([t.cuda() for t in xs]), g.grouped_allgather(xs)):
        same(a, b)
    # Splits: rank r sends r rows to member 0, none to member 1, the rest spread evenly.
    rows = make(dtype, (2 * g.size() + 3, 2), g.rank())
    splits = [0] * g.size()
    splits[0] = min(g.rank(), rows.shape[0])
    for i in range(rows.shape[0] - splits[0]):
        splits[2 + i % (g.size() - 2) if g.size() > 2 else 0] += 1
    got, got_splits = g.alltoall(rows.cuda(), splits=splits)
    want, want_splits = g.alltoall(rows, splits=splits)
    same(got, want)
    assert got_splits.is_cuda and got_splits.tolist() == want_splits.tolist()


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32, torch.int64, torch.uint8, torch.int16])
@pytest.mark.parametrize("op", ["Sum", "Average"])
def test_uneven_reducescatter_matches_cpu(g, dtype, op):
    if op == "Average" and dtype not in FLOATS:
        pytest.skip("Average of integers truncates differently by design")
    x = make(dtype, (2 * g.size() + 1, 3), g.rank())  # the first rank gets a row more
    for kw in ({}, dict(prescale_factor=0.5, postscale_factor=2.0)):
        if kw and dtype not in FLOATS:
            continue
        same(g.reducescatter(x.cuda(), op=getattr(g, op), **kw),
             g.reducescatter(x, op=getattr(g, op), **kw))
        xs = [x, make(dtype, (g.size() + 2,), g.rank(), 1), make(dtype, (1, 4), g.rank(), 2)]
        for a, b in zip(g.grouped_reducescatter([t.cuda() for t in xs], op=getattr(g, op), **kw),
                        g.grouped_reducescatter(xs, op=getattr(g, op), **kw)):
            same(a, b)


def test_nccl_outputs_are_device_memory_not_copies_of_host_memory(g):
    # On NCCL the output is hvd's device memory wrapped without a copy: torch's allocator
    # grows by nothing; staged, the host output is moved in (torch allocates it).
    x = torch.ones(1 << 20, device="cuda")
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    outs = [g.allgather(x, name="nocopy.ag"), g.reducescatter(x, op=g.Sum, name="nocopy.rs"),
            g.alltoall(x, name="nocopy.a2a")]
    grown = torch.cuda.memory_allocated() - before
    if _nccl(g):
        assert grown == 0, grown
    else:
        assert grown >= sum(o.numel() * o.element_size() for o in outs)
    assert torch.all(outs[0] == 1).item() and torch.all(outs[1] == g.size()).item()


def test_device_outputs_are_freed_when_their_tensors_die(g):
    # 16 outputs of 256 MiB made and dropped: leaked, they would hold 4 GiB per rank.
    x = torch.ones((256 << 20) // 4 // g.size(), device="cuda")
    g.allgather(x, name="free.warm")
    g.barrier()
    torch.cuda.synchronize()
    free_before = torch.cuda.mem_get_info()[0]
    for i in range(16):
        out = g.allgather(x, name=f"free.{i}")
        out.add_(1)  # used on the current stream before it dies (freed after that work)
        del out
    torch.cuda.synchronize()
    g.barrier()
    lost = free_before - torch.cuda.mem_get_info()[0]
    assert lost < (2 << 30), f"{lost >> 20} MiB of device memory not given back"


def test_device_output_views_keep_the_memory_alive(g):
    out = g.allgather(torch.arange(6, dtype=torch.float32, device="cuda").reshape(3, 2),
                      name="views")
    view = out[1:]
    del out
    torch.cuda.synchronize()
    expected = torch.arange(6, dtype=torch.float32).reshape(3, 2).repeat(g.size(), 1)[1:]
    torch.testing.assert_close(view.cpu(), expected)


def _train(g, device, compression=None, predivide=1.0, passes=1, steps=4):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 1)).to(device)
    opt = g.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=model.named_parameters(),
                                 compression=compression or g.Compression.none,
                                 gradient_predivide_factor=predivide,
                                 backward_passes_per_step=passes)
    g.broadcast_parameters(model.state_dict(), root_rank=0)
    g.broadcast_optimizer_state(opt, root_rank=0)
    gen = torch.Generator().manual_seed(1 + g.rank())
    for _ in range(steps):
        opt.zero_grad()
        for _ in range(passes):  # gradients accumulate over the passes, then one allreduce
            data = torch.randn(4, 8, generator=gen).to(device)
            model(data).pow(2).mean().backward()
        opt.step()
    return [p.detach().cpu() for p in model.parameters()]


# Horovod's DistributedOptimizer options on a CUDA model (NCCL or staged by the job's layout)
# against the same training on CPU tensors: fp16 compression, gradient_predivide_factor (the
# prescale and postscale of an Average) and backward_passes_per_step.
@pytest.mark.parametrize("case", ["fp16", "predivide", "passes"])
def test_distributed_optimizer_on_gpu_matches_cpu(g, case):
    kw = {"fp16": {"compression": g.Compression.fp16}, "predivide": {"predivide": 2.0},
          "passes": {"passes": 2}}[case]
    for a, b in zip(_train(g, "cuda", **kw), _train(g, "cpu", **kw)):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4)


def test_sync_batch_norm_on_gpu_matches_cpu(g):
    x = make(torch.float32, (4, 3, 5), g.rank(), offset=2)
    outs = []
    for device in ("cpu", "cuda"):
        bn = g.SyncBatchNorm(3).to(device)
        inp = x.detach().clone().to(device).requires_grad_()
        out = bn(inp)
        out.sum().backward()
        outs.append((out.detach().cpu(), inp.grad.cpu(), bn.running_mean.cpu()))
    for a, b in zip(*outs):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_host_memory_described_as_gpu_memory_is_refused(g):
    from hvd import _hvd_c as c
    host = torch.ones(4)
    with pytest.raises(c.Error, match="is not memory of CUDA device 0 .it is host memory."):
        c.allreduce((host.data_ptr(), c.FLOAT32, (4,), 0), (host.data_ptr(), c.FLOAT32, (4,), 0),
                    "bad.pointer", g.Sum, 1.0, 1.0, 0)


# ---- launched from the -np 1 run: paths, errors, a dead peer ---------------------------------

def _hvdrun(args, timeout, env=None):
    hvdrun = os.environ.get("HVD_TEST_HVDRUN")
    if not hvdrun:
        pytest.skip("HVD_TEST_HVDRUN not set")
    started = time.monotonic()
    proc = subprocess.run([hvdrun] + args, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
    return proc, time.monotonic() - started


SCRIPT = os.path.join(HERE, "gpu_worker.py")


def test_nccl_at_one_rank_and_staging_at_two_show_in_the_timeline(g, tmp_path):
    if g.size() != 1:
        pytest.skip("launches its own jobs from the -np 1 run")
    for np, activity in ((1, "NCCL_ALLREDUCE"), (2, "STAGED_ALLREDUCE")):
        timeline = tmp_path / f"timeline{np}.json"
        proc, _ = _hvdrun(["-np", str(np), "--timeline-filename", str(timeline), sys.executable,
                           SCRIPT, "allreduce"], 120)
        assert proc.returncode == 0, proc.stderr
        assert activity in timeline.read_text(), (np, activity)


# "gather-without-numpy": the same with `import numpy` failing in the ranks; hvd.torch reads
# the device outputs through their DLPack capsules (torch.as_tensor of a
# __cuda_array_interface__ raised "Numpy is not available" there).
@pytest.mark.parametrize("mode", ["gather", "gather-without-numpy"])
def test_allgather_reducescatter_alltoall_take_nccl_at_two_nccl_ranks(g, tmp_path, mode):
    if g.size() != 1:
        pytest.skip("launches its own jobs from the -np 1 run")
    # Each rank its own host: the three ops of CUDA tensors run on NCCL (the worker checks
    # their values and that the outputs are device memory), as the timeline shows.
    timeline = tmp_path / "timeline.json"
    proc, _ = _hvdrun(["-np", "2", "-H", "localhost:1,127.0.0.1:1", "--timeline-filename",
                       str(timeline), sys.executable, SCRIPT, mode], 120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = timeline.read_text()
    for activity in ("NCCL_ALLGATHER", "NCCL_REDUCESCATTER", "NCCL_ALLTOALL"):
        assert activity in text, activity


def test_ranks_of_hosts_of_their_own_take_nccl_on_one_gpu(g, tmp_path):
    if g.size() != 1:
        pytest.skip("launches its own jobs from the -np 1 run")
    # Each rank its own host (NCCL_HOSTID differs): 2 NCCL ranks on the one GPU.
    timeline = tmp_path / "timeline.json"
    proc, _ = _hvdrun(["-np", "2", "-H", "localhost:1,127.0.0.1:1", "--timeline-filename",
                       str(timeline), sys.executable, SCRIPT, "allreduce"], 120)
    assert proc.returncode == 0, proc.stderr
    assert "NCCL_ALLREDUCE" in timeline.read_text()


def test_nccl_forced_on_a_shared_gpu_is_a_clear_error(g):
    if g.size() != 1:
        pytest.skip("launches its own jobs from the -np 1 run")
    proc, _ = _hvdrun(["-np", "2", sys.executable, SCRIPT, "allreduce"], 120,
                      env={"HVD_GPU_OPERATIONS": "nccl"})
    assert proc.returncode != 0
    assert "share the GPU" in proc.stderr and "HVD_GPU_OPERATIONS=nccl" in proc.stderr, \
        proc.stderr


@pytest.mark.parametrize("op", ["allreduce", "allgather", "reducescatter", "alltoall",
                                "broadcast"])
def test_killed_nccl_peer_fails_the_survivor_within_seconds(g, op):
    if g.size() != 1:
        pytest.skip("launches its own jobs from the -np 1 run")
    # Given 2 NCCL ranks on the one GPU (each its own host), when rank 1 dies, then rank 0's
    # next collective on NCCL raises HorovodInternalError within seconds (the heartbeat, then
    # ncclCommAbort), whichever collective it is, and hvdrun names rank 1.
    _expect_survivor_failed(*_hvdrun(["-np", "2", "-H", "localhost:1,127.0.0.1:1",
                                      "--grace-period-seconds", "30", sys.executable, SCRIPT,
                                      "kill-peer:" + op], 120))


def test_killed_peer_fails_the_survivor_within_seconds(g):
    if g.size() != 1:
        pytest.skip("launches its own jobs from the -np 1 run")
    # Given 2 ranks allreducing CUDA tensors (staged through the host: they share the GPU), when
    # rank 1 dies, then rank 0's next collective raises HorovodInternalError within seconds
    # (the worker ignores hvdrun's SIGTERM so that it can say so), and hvdrun names rank 1.
    _expect_survivor_failed(*_hvdrun(["-np", "2", "--grace-period-seconds", "30",
                                      sys.executable, SCRIPT, "kill-peer"], 120))


def _expect_survivor_failed(proc, took):
    """The job failed naming rank 1, its survivor got HorovodInternalError within 10 s, and it
    ended within 45 s."""
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "rank 1" in proc.stderr, proc.stderr
    found = re.search(r"survivor: HorovodInternalError after ([0-9.]+) s", proc.stdout)
    assert found, proc.stdout + proc.stderr
    assert float(found.group(1)) < 10, found.group(0)
    assert took < 45, f"the job took {took:.1f} s to end"
