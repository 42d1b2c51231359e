"""One rank of test_hierarchical.py: allreduces from 4 bytes to 8 MiB (both paths of the
hierarchical algorithm), several dtypes and ops, a repeated small allreduce (the eager round),
a fused group of allreduces, Adasum allreduces, a reducescatter, a grouped reducescatter, a grouped allgather, an
allgather of uneven rows and repeated lone small allgathers, broadcasts, alltoalls and
reducescatters, each checked against the value computed from every rank's known input. Prints
"OK rank R" or raises."""
import torch

import hvd.torch as hvd


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    for count in (1, 3, 1000, 16385, 2 * 1024 * 1024 + 7):
        for dtype in (torch.float32, torch.float64, torch.int32):
            base = (torch.arange(count, dtype=torch.int64) % 7 + 1).to(dtype)
            got = hvd.allreduce(base * (rank + 1), op=hvd.Sum, name=f"sum.{count}.{dtype}")
            assert torch.equal(got, base * sum(range(1, size + 1))), (count, dtype)
            got = hvd.allreduce(base + rank, op=hvd.Max, name=f"max.{count}.{dtype}")
            assert torch.equal(got, base + (size - 1)), (count, dtype)
        avg = hvd.allreduce(torch.full((count,), float(rank)), op=hvd.Average,
                            name=f"avg.{count}")
        assert torch.allclose(avg, torch.full((count,), (size - 1) / 2)), count
    # A loss-like lone allreduce repeated: from its fifth op it rides the negotiation's round
    # (the eager allreduce), which goes through the hierarchy too.
    # A 16 KiB one rides it too, split across the cross groups (docs/transports.md).
    for step in range(20):
        loss = hvd.allreduce(torch.tensor([float(rank + step)]), op=hvd.Sum, name="loss")
        assert loss.item() == sum(range(size)) + size * step, (step, loss)
    ramp = torch.arange(4096, dtype=torch.float32) % 13
    for step in range(20):
        got = hvd.allreduce(ramp * (rank + step), op=hvd.Sum, name="metrics")
        assert torch.equal(got, ramp * (sum(range(size)) + size * step)), step
    # A fused allreduce (one group: one response) big enough for the reduce-scatter path runs
    # on the tensors themselves, with no copy into the fusion buffer (the test reads the
    # timeline); Average post-scales each output.
    group = [(torch.arange(n, dtype=torch.float32) % 11) * (rank + 1) for n in (5, 20000, 1, 3000)]
    for op, factor in ((hvd.Sum, sum(range(1, size + 1))), (hvd.Average, (size + 1) / 2)):
        outs = hvd.grouped_allreduce(group, op=op, name=f"group.{op}")
        for t, got in zip(group, outs):
            assert torch.allclose(got, t / (rank + 1) * factor), (op, t.numel())
    # Adasum (its own collective: an alltoall, a small allreduce per tree level, an allgather)
    # across the hosts: updates on disjoint elements are orthogonal, so they add exactly; equal
    # ones stay as they are.
    for count in (size, 3 * 1024 * 1024 + 5):
        mine = torch.zeros(count)
        block = count // size
        mine[rank * block:(rank + 1) * block] = rank + 1.0
        got = hvd.allreduce(mine, op=hvd.Adasum, name=f"adasum.{count}")
        want = torch.zeros(count)
        for r in range(size):
            want[r * block:(r + 1) * block] = r + 1.0
        assert torch.equal(got, want), count
    same = torch.arange(1000, dtype=torch.float64) % 5 - 2
    assert torch.allclose(hvd.allreduce(same, op=hvd.Adasum, name="adasum.same"), same)
    # Reducescatter goes through the hierarchy too: uneven rows (the first ranks one more).
    full = torch.arange(size * 5 + 3, dtype=torch.float32)
    part = hvd.reducescatter(full * (rank + 1), op=hvd.Sum, name="rs")
    lo = rank * 5 + min(rank, 3)
    hi = lo + 5 + (1 if rank < 3 else 0)
    assert torch.equal(part, full[lo:hi] * sum(range(1, size + 1))), (part, lo, hi)
    # A grouped reducescatter (one fused response) reads its tensors in place as well: uneven
    # rows in both, and a second one big enough for the local reduce-scatter's chunks.
    a = torch.arange(size * 3 + 1, dtype=torch.float32)
    b = torch.arange((size * 40000 + 2) * 2, dtype=torch.float32).reshape(-1, 2) % 9
    got_a, got_b = hvd.grouped_reducescatter([a * (rank + 1), b * (rank + 1)], op=hvd.Sum,
                                             name="group.rs")
    factor = sum(range(1, size + 1))
    for t, got, rows in ((a, got_a, 3), (b, got_b, 40000)):
        extra = t.shape[0] - rows * size
        lo = rank * rows + min(rank, extra)
        hi = lo + rows + (1 if rank < extra else 0)
        assert torch.equal(got, t[lo:hi] * factor), (t.shape, lo, hi)
    rows = hvd.allgather(torch.full((rank + 1, 3), rank, dtype=torch.int64), name="rows")
    expected = torch.cat([torch.full((r + 1, 3), r, dtype=torch.int64) for r in range(size)])
    assert torch.equal(rows, expected)
    # A grouped allgather (one fused response) gathers straight into its outputs.
    small = torch.full((rank + 1, 2), rank, dtype=torch.float32)
    big = torch.arange((rank + 1) * 30000, dtype=torch.float32) + rank
    got_small, got_big = hvd.grouped_allgather([small, big], name="group.ag")
    assert torch.equal(got_small, torch.cat([torch.full((r + 1, 2), r, dtype=torch.float32)
                                             for r in range(size)]))
    assert torch.equal(got_big, torch.cat([torch.arange((r + 1) * 30000, dtype=torch.float32) + r
                                           for r in range(size)]))
    # Lone small allgathers, broadcasts, alltoalls and reducescatters in turn (each the known
    # successor of the one before from the third round): they ride the negotiation's round,
    # every rank posting its input to the flat group (TCP_EAGER_*).
    for step in range(12):
        got = hvd.allgather(torch.full((rank + 1,), rank + step, dtype=torch.int32),
                            name="lone.ag")
        want = torch.cat([torch.full((r + 1,), r + step, dtype=torch.int32) for r in range(size)])
        assert torch.equal(got, want), (step, got)
        got = hvd.broadcast(torch.full((5,), float(rank * 10 + step)), root_rank=size - 1,
                            name="lone.bc")
        assert torch.equal(got, torch.full((5,), float((size - 1) * 10 + step))), (step, got)
        send = torch.tensor([rank * 100 + j * 10 + step for j in range(size)])
        got = hvd.alltoall(send, name="lone.a2a")
        assert torch.equal(got, torch.tensor([r * 100 + rank * 10 + step for r in range(size)]))
        ramp = torch.arange(size * 2, dtype=torch.float32)
        part = hvd.reducescatter(ramp * (rank + 1) + step, op=hvd.Sum, name="lone.rs")
        want = ramp * sum(range(1, size + 1)) + size * step
        assert torch.equal(part, want[rank * 2:rank * 2 + 2]), (step, part)
    hvd.barrier()
    print(f"OK rank {rank}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
