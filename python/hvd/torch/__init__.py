"""hvd.torch: Horovod's horovod.torch API on the hvd runtime.

    import hvd.torch as hvd          # or: import horovod.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

CPU tensors of dtype uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64
and bool are supported. See docs/python.md for coverage and differences from Horovod.
"""
from hvd.basics import (Adasum, Average, Max, Min, Product, Sum, ccl_built, cross_rank,
                        cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled, init,
                        is_homogeneous, is_initialized, local_rank, local_size, mpi_built,
                        mpi_enabled, mpi_threads_supported, nccl_built, rank, rocm_built,
                        shutdown, size, start_timeline, stop_timeline)
from hvd.exceptions import HorovodInternalError, HostsUpdatedInterrupt
from hvd.process_sets import (ProcessSet, add_process_set, global_process_set,
                              remove_process_set)
from hvd.torch.compression import Compression
from hvd.torch.functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                                 broadcast_parameters)
from hvd.torch.mpi_ops import (allgather, allgather_async, allreduce, allreduce_,
                               allreduce_async, allreduce_async_, alltoall, alltoall_async,
                               barrier, broadcast, broadcast_, broadcast_async,
                               broadcast_async_, grouped_allgather, grouped_allgather_async,
                               grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
                               grouped_allreduce_async_, grouped_reducescatter,
                               grouped_reducescatter_async, join, poll, reducescatter,
                               reducescatter_async, sparse_allreduce_async, synchronize)
from hvd.torch.optimizer import DistributedOptimizer
from hvd.torch.sync_batch_norm import SyncBatchNorm
from hvd.torch import elastic
