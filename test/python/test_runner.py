"""horovod.run / hvd.runner.run: a function launched on N ranks through the real hvdrun, its
return values collected in rank order; and horovod.common.util.check_extension."""
import pytest

import horovod
import horovod.runner
from horovod.common.util import check_extension, gpu_available


def _rank_and_sum(offset, scale=1):
    import torch

    import hvd.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank() + offset)]), op=hvd.Sum).item()
    return {"rank": hvd.rank(), "size": hvd.size(), "sum": total * scale}


def test_run_returns_every_ranks_value_in_rank_order():
    results = horovod.run(_rank_and_sum, args=(10,), kwargs={"scale": 2}, num_proc=3)
    assert [r["rank"] for r in results] == [0, 1, 2]
    assert all(r["size"] == 3 and r["sum"] == 2 * (10 + 11 + 12) for r in results)


def test_run_carries_closures_and_accepts_horovods_deprecated_np():
    base = 7
    with pytest.warns(DeprecationWarning):
        results = horovod.runner.run(lambda: base + 1, np=2)
    assert results == [8, 8]


def _size():
    import os
    return int(os.environ["HVD_SIZE"])


def test_without_num_proc_hvdruns_defaults_decide():
    # The ranks come from -H's slots, and from --min-np (a fixed "-np 1" used to override
    # both: one rank, and "-np: must be >= --min-np (2), got 1").
    assert horovod.run(_size, hosts="localhost:3") == [3, 3, 3]
    assert horovod.run(_size) == [1]


def _fail_on_rank_one():
    import os
    if os.environ["HVD_RANK"] == "1":
        raise ValueError("rank one refuses")
    return "ok"


def test_a_failing_rank_fails_the_run_naming_hvdruns_exit():
    with pytest.raises(RuntimeError, match=r"hvdrun exited 1"):
        horovod.run(_fail_on_rank_one, num_proc=2)


def _elastic_rank_and_size(tmp):
    import os

    import hvd.torch as hvd

    @hvd.elastic.run
    def train(state):
        if os.environ["HVD_ELASTIC_WORKER_ID"] == "0" and not os.path.exists(tmp):
            open(tmp, "w").close()
            os._exit(1)  # the first worker fails once; its host is blacklisted
        hvd.allreduce(__import__("torch").ones(1), name="step")
        return (hvd.rank(), hvd.size())

    hvd.init()
    return train(hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, step=0))


# Horovod's test_elastic_run: results come back by the ranks of the last round.
def test_elastic_run_returns_the_values_of_the_last_round(tmp_path):
    results = horovod.run(_elastic_rank_and_size, args=(str(tmp_path / "failed"),), num_proc=3,
                          min_num_proc=2, hosts="localhost:1,127.0.0.1:2")
    assert results == [(0, 2), (1, 2)]


def test_gpu_available():
    import torch
    from hvd.basics import cuda_built
    assert gpu_available("torch") == (cuda_built() and torch.cuda.is_available())
    assert gpu_available("tensorflow") is False


def test_check_extension():
    check_extension("horovod.torch", "HOROVOD_WITH_PYTORCH", __file__, "mpi_lib_v2")
    with pytest.raises(ImportError, match="Extension horovod.tensorflow has not been built. "
                                          "If this is not expected, reinstall Horovod with "
                                          "HOROVOD_WITH_TENSORFLOW=1"):
        check_extension("horovod.tensorflow", "HOROVOD_WITH_TENSORFLOW", __file__, "mpi_lib")


def test_horovod_version_and_process_sets_module():
    # Scripts gate features on horovod.__version__ and import process sets from
    # horovod.common.process_sets (both missing before).
    import hvd.process_sets
    from horovod.common import process_sets
    assert horovod.__version__ == "0.28.1"
    assert process_sets.ProcessSet is hvd.process_sets.ProcessSet
    assert process_sets.global_process_set is hvd.process_sets.global_process_set


def _through_horovod_basics():
    # How integrations written against Horovod start it (Ray's, for one): their own
    # HorovodBasics, given Horovod's library location, which hvd accepts and does not use.
    from horovod.common.basics import HorovodBasics

    import hvd.torch as hvd
    basics = HorovodBasics(__file__, "mpi_lib_v2")
    basics.init()
    seen = {"rank": basics.rank(), "size": basics.size(), "local": basics.local_rank(),
            "same": (basics.rank(), basics.size()) == (hvd.rank(), hvd.size()),
            "initialized": basics.is_initialized(), "gloo_built": basics.gloo_built(),
            "nccl_built": basics.nccl_built() == hvd.nccl_built()}
    basics.shutdown()
    seen["after"] = basics.is_initialized()
    return seen


def test_horovod_common_basics_is_the_same_runtime():
    results = horovod.run(_through_horovod_basics, num_proc=2)
    assert [r["rank"] for r in results] == [0, 1]
    assert all(r["size"] == 2 and r["same"] and r["initialized"] and r["gloo_built"] and
               r["nccl_built"] and not r["after"] for r in results), results
