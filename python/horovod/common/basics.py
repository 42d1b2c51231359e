"""horovod.common.basics: Horovod's HorovodBasics, the object its framework modules build
init, rank, size and the build queries from, over hvd's one runtime (hvd.basics).

Integrations written against Horovod construct it themselves (``HorovodBasics(__file__,
"mpi_lib")``: the folder and name of Horovod's per-framework library). hvd has one runtime for
every framework, so those arguments are accepted and not used; every instance answers for that
runtime, as hvd.torch's functions do.
"""
from hvd import basics as _basics

# The methods HorovodBasics has in Horovod 0.28.1 that take no arguments beyond self, and the
# hvd.basics function each one is.
_QUERIES = ("shutdown", "is_initialized", "size", "local_size", "cross_size", "rank",
            "local_rank", "cross_rank", "is_homogeneous", "mpi_threads_supported", "mpi_enabled",
            "mpi_built", "gloo_enabled", "gloo_built", "nccl_built", "ddl_built", "ccl_built",
            "cuda_built", "rocm_built", "stop_timeline")


class HorovodBasics:
    """Horovod's HorovodBasics: init(), shutdown(), size(), rank(), ..., the *_built() and
    *_enabled() queries and the timeline calls, each the hvd.basics function of that name."""

    def __init__(self, pkg_path=None, *args):
        del pkg_path, args  # Horovod's library location: hvd has one runtime

    def init(self, comm=None, process_sets=None):
        return _basics.init(comm, process_sets)

    def start_timeline(self, file_path, mark_cycles=False):
        return _basics.start_timeline(file_path, mark_cycles)


def _forward(name):
    function = getattr(_basics, name)

    def method(self):
        return function()

    method.__name__ = name
    method.__doc__ = function.__doc__
    return method


for _name in _QUERIES:
    setattr(HorovodBasics, _name, _forward(_name))

__all__ = ["HorovodBasics"]
