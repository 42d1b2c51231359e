"""hvd.torch's handles: what each operation in flight keeps alive until it is synchronized, the
errors of a runtime call, and the waits (``poll``, ``synchronize``), including what happens to
an operation whose caller was interrupted (Ctrl-C) while the runtime still reads or writes its
memory. Split out of mpi_ops.py (the collectives) on 2026-12-01; mpi_ops re-exports ``poll``
and ``synchronize``, as Horovod's torch/mpi_ops.py has them.
"""
from typing import Any, Callable, Dict, Optional, Tuple

from hvd import _hvd_c as _c
from hvd.basics import on_shutdown, translate_error
from hvd.exceptions import HorovodInternalError

Handle = int


class _Pending:
    """What a handle keeps alive, and how its result is built once it completed."""

    __slots__ = ("keep", "finish")

    def __init__(self, keep: Tuple[Any, ...], finish: Callable[[Handle], Any]) -> None:
        self.keep = keep
        self.finish = finish


_handle_map: Dict[Handle, _Pending] = {}


# Handles that shutdown() dropped before they were synchronized: synchronize() raises for them
# (the op failed with the shutdown, or its result went with the runtime), instead of returning
# None as for a handle it never saw.
_dropped: set = set()


def _drop_handles() -> None:
    for handle in list(_handle_map):
        _forget(handle)
        _dropped.add(handle)


on_shutdown(_drop_handles)


def _forget(handle: Handle) -> None:
    _handle_map.pop(handle, None)
    try:
        _c.release(handle)
    except _c.Error:
        pass  # already gone (shutdown) or never completed; nothing left to free here


def _op_error(error: "_c.Error") -> Exception:
    """The exception for a failed call: ValueError (translate_error) when enqueueing was
    refused for a caller error, HorovodInternalError when the operation itself failed."""
    refused = (_c.NOT_INITIALIZED, _c.INVALID_ARGUMENT, _c.PRECONDITION_FAILED)
    if not getattr(error, "in_wait", False) and error.status in refused:
        return translate_error(error)
    return HorovodInternalError(str(error))


def _enqueue(call: Callable[..., Any], *args: Any) -> Any:
    """`call(*args)` into the runtime (an enqueue, or a synchronous *_now call), its errors as
    _op_error says."""
    try:
        return call(*args)
    except _c.Error as error:
        raise _op_error(error) from None


def _start(keep: Tuple[Any, ...], finish: Callable[[Handle], Any], call: Callable[..., Any],
           *args: Any) -> Handle:
    """Enqueues `call(*args)` and registers its handle with `keep` (what owns the op's memory)
    and `finish` (its result). The enqueue releases the GIL, so a signal's exception (Ctrl-C)
    is raised as it returns, before the handle is stored; the runtime then went on writing into
    memory that Python freed as the exception unwound (until 2026-12-01). Interrupted there, the
    op goes to the extension, which keeps `keep` until it completes and then releases it."""
    _c.take_last_enqueued()
    try:
        handle = call(*args)
        _handle_map[handle] = _Pending(keep, finish)
        return handle
    except _c.Error as error:
        raise _op_error(error) from None
    except BaseException:
        _orphan(_c.take_last_enqueued(), keep)
        raise


# Handles whose caller was interrupted before it had the result: their ops complete in the
# background (the extension keeps their memory and releases them); synchronize() says so.
_orphaned: set = set()


def _orphan(handle: Optional[Handle], keep: Tuple[Any, ...]) -> None:
    if handle is None:
        return
    pending = _handle_map.pop(handle, None)
    _c.keep_until_done(handle, pending.keep if pending is not None else keep)
    _orphaned.add(handle)


def poll(handle: Handle) -> bool:
    """True when the operation of `handle` completed (successfully or not)."""
    try:
        return _c.poll(handle)
    except _c.Error as error:
        if error.status == _c.NOT_FOUND:  # a caller error, as Horovod's invalid_argument
            raise ValueError(f"Handle {handle} was not created or has been cleared "
                             f"(synchronized already?): {error}") from None
        raise HorovodInternalError(str(error)) from None


def synchronize(handle: Handle):
    """Waits for `handle` and returns its output (a list for grouped operations, a tuple
    (output, received_splits) for alltoall). Raises HorovodInternalError if it failed."""
    pending = _handle_map.get(handle)
    if pending is None:
        if handle in _orphaned:
            raise HorovodInternalError(
                f"handle {handle}: an earlier synchronize() of it was interrupted; its operation "
                "completed (or completes) without a caller, and its result is gone")
        if handle in _dropped:
            _dropped.discard(handle)
            raise HorovodInternalError(
                "Horovod has been shut down: hvd.shutdown() ran before this handle was "
                "synchronized, and its operation's result is gone")
        return None
    try:
        _c.wait(handle)
    except _c.Error as error:
        _forget(handle)
        raise HorovodInternalError(str(error)) from None
    except BaseException:
        # Interrupted (Ctrl-C): the op goes on without its caller, its memory kept and its
        # handle released once it completes, so that its name is free again (a barrier's, a
        # join's, a fixed name: until 2026-12-01 the next one was refused as a duplicate on this
        # rank while the peers waited in theirs).
        _orphan(handle, ())
        raise
    try:
        return pending.finish(handle)
    finally:
        _forget(handle)


# Barriers and joins whose caller was interrupted in the wait, oldest first.
_orphaned_blocking: list = []


def _run_blocking(result: Callable[[Handle], Any], call: Callable[..., Any], *args: Any):
    # An interrupted barrier (or join) is still the one the peers are in: this rank's next one
    # comes after it completes, when its fixed name is free again, as in Horovod, whose wait
    # cannot be interrupted (until 2026-12-01 the next one was refused as a duplicate name).
    while _orphaned_blocking:
        try:
            _c.wait(_orphaned_blocking[0])
        except _c.Error:
            pass  # failed, or completed and released already: either way it is over
        _orphaned_blocking.pop(0)
    handle = _start((), result, call, *args)
    try:
        return synchronize(handle)
    except _c.Error as error:
        raise HorovodInternalError(str(error)) from None
    except BaseException:
        if handle in _orphaned:
            _orphaned_blocking.append(handle)
        raise
