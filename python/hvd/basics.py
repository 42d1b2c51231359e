"""Lifecycle, topology and build information: the framework-independent half of the API.

Importing this module loads libhvd (hvd._runtime).
Every function here is the same object in hvd.torch and hvd.numpy.
"""
import atexit
import os
import sys
from typing import Callable, List, Optional, Sequence

from hvd import _hvd_c as _c
from hvd import process_sets as _ps
# Re-exported: scripts and tests read hvd.basics.runtime_library and friends.
from hvd._runtime import (NOT_INITIALIZED_MESSAGE, runtime_library,  # noqa: F401
                          runtime_library_candidates, translate_error)

# Horovod's reduce-op constants (numbered as horovod_reduce_op_*()).
Average = _c.OP_AVERAGE
Sum = _c.OP_SUM
Adasum = _c.OP_ADASUM
Min = _c.OP_MIN
Max = _c.OP_MAX
Product = _c.OP_PRODUCT

_shutdown_callbacks: List[Callable[[], None]] = []


def on_shutdown(callback: Callable[[], None]) -> None:
    """Registers `callback` to run after every shutdown() (framework bindings drop handles)."""
    _shutdown_callbacks.append(callback)


def _query(getter: Callable[[], int]) -> int:
    try:
        return getter()
    except _c.Error as error:
        raise translate_error(error) from None


def init(comm: Optional[Sequence[int]] = None, process_sets=None) -> None:
    """Initializes the runtime: rendezvous with the other ranks started by hvdrun, or a
    single rank when the process was not started by hvdrun.

    comm: None, or a list of ranks that must be all ranks (running on a subset of the job,
    and mpi4py communicators, need the MPI controller, which this build does not offer).
    process_sets: None, a list of ``ProcessSet`` registered statically, or ``"dynamic"`` to
    allow ``add_process_set``/``remove_process_set`` later (HOROVOD_DYNAMIC_PROCESS_SETS=1).
    """
    if comm is not None and not isinstance(comm, (list, tuple, range)):
        raise NotImplementedError(
            "init(comm=<MPI communicator>) needs the MPI controller, which hvd does not offer; "
            "use process_sets instead")
    static_sets: List["_ps.ProcessSet"] = []
    if process_sets == "dynamic":
        os.environ["HVD_DYNAMIC_PROCESS_SETS"] = "1"
    elif process_sets is not None:
        static_sets = [p if isinstance(p, _ps.ProcessSet) else _ps.ProcessSet(p)
                       for p in process_sets]
    try:
        if static_sets:
            ranks = [r for p in static_sets for r in p.ranks]
            _c.init(ranks, [len(p.ranks) for p in static_sets])
        else:
            _c.init()
    except _c.Error as error:
        raise translate_error(error) from None
    if comm is not None and sorted(comm) != list(range(size())):
        shutdown()
        raise NotImplementedError(
            f"init(comm={list(comm)}): running on a subset of the ranks is not supported; "
            "use process_sets to run collectives on a subset")
    _ps.setup_after_init(static_sets)


def shutdown() -> None:
    """Stops the runtime; pending operations fail. init() may be called again afterwards."""
    try:
        _c.shutdown()
    except _c.Error as error:
        if error.status != _c.NOT_INITIALIZED:
            raise translate_error(error) from None
    for callback in _shutdown_callbacks:
        callback()


def _shutdown_at_exit() -> None:
    if _c.is_initialized():
        shutdown()


def _spare_signals(taken: int, count: int) -> List[int]:
    """`count` real-time signals after `taken` that nothing handles (SIG_DFL), or fewer."""
    import signal
    spare = []
    for signo in range(taken + 1, signal.SIGRTMAX + 1):
        if len(spare) == count:
            break
        try:
            if signal.getsignal(signo) == signal.SIG_DFL:
                spare.append(signo)
        except (ValueError, OSError):
            continue
    return spare


def _register_stack_dump() -> None:
    """hvdrun asks a rank where it is (SIGQUIT to hvdrun, the stall inspector naming the rank,
    --timeout) with the signal it puts in HVD_STACK_SIGNAL: faulthandler then prints the
    Python stacks to stderr, and the rank runs on. Left alone when the program handles that
    signal itself, or when not started by hvdrun (the variable is unset or 0).

    The signal is handled in C (hvd._hvd_c.route_stack_dumps, python/src/stack_dump.h): the
    kernel hands it to any thread, and faulthandler's dump of every thread run on one that is
    not Python's (hvd's cycle thread, NCCL's, CUDA's) while the main thread ran Python crashed
    the process (it reads frames without the GIL). The request is sent on to the main thread,
    which dumps every thread when it was interrupted holding the GIL (no frame can move then),
    and itself alone, with a line saying so, when the GIL was free. faulthandler's two dumps are
    registered on two spare real-time signals that nothing sends; without two spare signals,
    or off the main thread, faulthandler handles the request itself, as before.

    The request's own signal is set to SIG_IGN first, and back to it at exit (atexit): a request
    in a rank's last moments is dropped instead of ending the rank by the signal's default
    action, or crashing it in faulthandler's handler after the finalization freed it. Every
    handler keeps errno: the signal may land between a failed recv() and the look at errno on
    one of hvd's threads (test_stack_dump.py's stress test)."""
    value = os.environ.get("HVD_STACK_SIGNAL", "")
    if not value:
        return
    try:
        import faulthandler
        import signal
        import threading
        signo = int(value)
        if signo <= 0 or signal.getsignal(signo) != signal.SIG_DFL:
            return
        signal.signal(signo, signal.SIG_IGN)
        # Descriptor 2, which hvdrun reads, whatever became of sys.stderr (a logging setup,
        # pytest's capture) by the time a request comes.
        spare = _spare_signals(signo, 2)
        main = (threading.current_thread() is threading.main_thread() and
                threading.get_native_id() == os.getpid())
        if main and len(spare) == 2:
            for s, all_threads in zip(spare, (True, False)):
                signal.signal(s, signal.SIG_IGN)  # a stray one is dropped, not fatal
                faulthandler.register(s, file=2, all_threads=all_threads, chain=False)
            if _c.route_stack_dumps(signo, spare[0], spare[1]):
                # Before the finalization frees faulthandler's registrations (atexit runs
                # last-registered first: after hvd's shutdown below).
                atexit.register(_c.unroute_stack_dumps)
                return
            for s in spare:
                faulthandler.unregister(s)
        faulthandler.register(signo, file=2, all_threads=True, chain=True)
    except (ValueError, OSError, RuntimeError, AttributeError):
        return  # a bad number, not the main thread, no usable stderr: no dumps


_register_stack_dump()
# Stop the runtime's threads before the interpreter tears down the objects they use.
atexit.register(_shutdown_at_exit)


def _report_uncaught(exc_type, exc, tb) -> None:
    """sys.excepthook: an uncaught exception ends this process, whose exit shuts the runtime
    down and fails the peers' collectives at once; a peer may then exit before this rank does.
    Told first, hvdrun names this rank and its exception in its failure summary. Not for
    HorovodInternalError (a collective failed: a consequence, or every rank's mismatch) or a
    Ctrl-C."""
    try:
        from hvd.exceptions import HorovodInternalError
        if _c.is_initialized() and not issubclass(exc_type, (HorovodInternalError,
                                                             KeyboardInterrupt)):
            _c.report_failure(f"{exc_type.__name__}: {exc}")
    except Exception:  # the report is a courtesy; the traceback below is what counts
        pass
    _previous_excepthook(exc_type, exc, tb)


_previous_excepthook = sys.excepthook
sys.excepthook = _report_uncaught




def is_initialized() -> bool:
    return _c.is_initialized()


def size() -> int:
    return _query(_c.size)


def local_size() -> int:
    return _query(_c.local_size)


def cross_size() -> int:
    return _query(_c.cross_size)


def rank() -> int:
    return _query(_c.rank)


def local_rank() -> int:
    return _query(_c.local_rank)


def cross_rank() -> int:
    return _query(_c.cross_rank)


def is_homogeneous() -> bool:
    """True when every host runs the same number of ranks."""
    return bool(_query(_c.is_homogeneous))


def _enabled(flag: int) -> bool:
    try:
        return bool(_c.enabled_flags() & flag)
    except _c.Error:
        return False


def mpi_enabled() -> bool:
    return _enabled(_c.BUILT_MPI)


def gloo_enabled() -> bool:
    return _enabled(_c.BUILT_GLOO)


def mpi_threads_supported() -> bool:
    if not mpi_enabled():
        raise ValueError("Horovod MPI is not enabled; Please make sure it's installed and enabled.")
    return True


def mpi_built() -> bool:
    return bool(_c.build_flags() & _c.BUILT_MPI)


def gloo_built() -> bool:
    return bool(_c.build_flags() & _c.BUILT_GLOO)


def nccl_built() -> int:
    """NCCL_VERSION_CODE of the NCCL this build's GPU path uses (e.g. 22809 for 2.28.9), 0
    without one: Horovod's answer (its tests compare it with 2700)."""
    return _c.nccl_version()


def cuda_built() -> bool:
    return bool(_c.build_flags() & _c.BUILT_CUDA)


def ddl_built() -> bool:
    return False


def ccl_built() -> bool:
    return False


def rocm_built() -> bool:
    return False


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    """Starts writing a Chrome-trace timeline to `file_path` on this rank."""
    try:
        _c.start_timeline(file_path, bool(mark_cycles))
    except _c.Error as error:
        raise ValueError(f"start_timeline({file_path!r}) failed: {error}") from None


def stop_timeline() -> None:
    try:
        _c.stop_timeline()
    except _c.Error as error:
        raise ValueError(f"stop_timeline() failed: {error}") from None
