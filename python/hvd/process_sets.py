"""Process sets: subsets of ranks that run collectives among themselves (Horovod semantics).

Set id 0 is ``global_process_set`` (all ranks). Sets given to ``init(process_sets=[...])`` are
registered at init; ``add_process_set``/``remove_process_set`` afterwards need
``init(process_sets="dynamic")``. Every rank must make the same calls in the same order.
"""
import operator
from typing import Dict, List, Optional, Sequence, Union

from hvd import _hvd_c as _c
from hvd._runtime import translate_error


class ProcessSet:
    """A set of global ranks; ``process_set_id`` is None until it is registered."""

    def __init__(self, ranks_or_comm: Sequence[int]) -> None:
        # Any iterable of ranks (a numpy array, a set, a deque), as Horovod sorts what it gets;
        # an mpi4py communicator is not one (it has Get_rank).
        if hasattr(ranks_or_comm, "Get_rank") or not hasattr(ranks_or_comm, "__iter__"):
            raise NotImplementedError(
                "ProcessSet(<MPI communicator>) needs the MPI controller, which hvd does not offer; "
                f"give the ranks instead (got {type(ranks_or_comm).__name__})")
        self.ranks: List[int] = sorted(int(r) for r in ranks_or_comm)
        self.process_set_id: Optional[int] = None
        self.mpi_comm = None

    def _call(self, fn):
        if self.process_set_id is None:
            return None
        try:
            return fn(self.process_set_id)
        except _c.Error as error:
            raise translate_error(error) from None

    def size(self) -> Optional[int]:
        """Number of ranks in the set; None while the set is not registered."""
        return self._call(_c.process_set_size)

    def rank(self) -> Optional[int]:
        """This process's rank within the set (-1 if not a member); None if not registered."""
        return self._call(_c.process_set_rank)

    def included(self) -> Optional[bool]:
        """Whether this process belongs to the set; None if not registered."""
        return self._call(_c.process_set_included)

    def _invalidate(self) -> None:
        self.process_set_id = None

    def __str__(self) -> str:
        return (f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, "
                f"mpi_comm={self.mpi_comm})")

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0

_registered: dict = {}
# Per-set sequence numbers of unnamed operations. Only a set's members issue operations on
# it, so per-set counters stay equal across those members even when ranks run different
# numbers of operations on other sets (a process-wide counter would drift apart).
_unnamed_counts: Dict[int, int] = {}


def registered_id(process_set: "ProcessSet") -> int:
    """The runtime id of `process_set`; ValueError naming it while it is not registered."""
    if process_set.process_set_id is None:
        raise ValueError(f"{process_set} is not registered; use hvd.add_process_set() or "
                         "hvd.init(process_sets=[...])")
    return process_set.process_set_id


def root_rank_arg(root_rank) -> int:
    """`root_rank` as an int: an integer (Python's, numpy's) only; 1.7 is a TypeError, as under
    Horovod's bindings, not root 1."""
    try:
        return operator.index(root_rank)
    except TypeError:
        raise TypeError(f"root_rank must be an integer, got {type(root_rank).__name__} "
                        f"{root_rank!r}") from None


def operation_name(prefix: str, name: Optional[str], process_set: "ProcessSet") -> str:
    """The runtime name of an operation: "<prefix>.<name>", or for an unnamed one
    "<prefix>.noname.<set id>.<n>" where n counts this set's unnamed operations."""
    if name is not None:
        return f"{prefix}.{name}"
    set_id = process_set.process_set_id
    count = _unnamed_counts.get(set_id, 0)
    _unnamed_counts[set_id] = count + 1
    return f"{prefix}.noname.{set_id}.{count}"


def setup_after_init(static_sets: List[ProcessSet]) -> None:
    """Binds the ids the runtime assigned at init to `static_sets` and global_process_set."""
    for process_set in _registered.values():
        process_set._invalidate()
    _registered.clear()
    _unnamed_counts.clear()
    global_process_set.process_set_id = 0
    global_process_set.ranks = _c.process_set_ranks(0)
    _registered[0] = global_process_set
    by_ranks = {tuple(_c.process_set_ranks(i)): i for i in _c.process_set_ids() if i != 0}
    for process_set in static_sets:
        process_set.process_set_id = by_ranks.get(tuple(process_set.ranks))
        if process_set.process_set_id is None:
            raise RuntimeError(f"the runtime did not register {process_set}")
        _registered[process_set.process_set_id] = process_set


def add_process_set(process_set: Union[ProcessSet, Sequence[int]]) -> ProcessSet:
    """Registers a new process set (dynamic mode only) and returns it with its id set."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError(f"Attempted to add process set that has already been added: {process_set}")
    try:
        process_set.process_set_id = _c.add_process_set(process_set.ranks)
    except _c.Error as error:
        joined_add = _added_while_joined(process_set.ranks)  # "already exists", but not here
        if joined_add is not None:
            process_set.process_set_id = joined_add
        elif error.status == _c.PRECONDITION_FAILED:
            raise ValueError(f"cannot add {process_set}: {error}") from None
        else:
            raise translate_error(error) from None
    _registered[process_set.process_set_id] = process_set
    _unnamed_counts.pop(process_set.process_set_id, None)
    return process_set


def _added_while_joined(ranks) -> Optional[int]:
    """The id of a set of `ranks` the runtime has but this process never registered: the other
    ranks added it while this one was blocked in join() (a joined rank takes part in every
    collective, process-set changes included). This rank's own add of it, after its join, then
    takes that set instead of failing with "already exists" (until 2026-12-01)."""
    for set_id in _c.process_set_ids():
        if set_id != 0 and set_id not in _registered and \
                list(_c.process_set_ranks(set_id)) == list(ranks):
            return set_id
    return None


def remove_process_set(process_set: ProcessSet) -> bool:
    """Unregisters `process_set` (dynamic mode only). Returns False if it was not registered."""
    if process_set.process_set_id is None:
        return False
    if process_set.process_set_id == 0:
        raise ValueError("Attempted to remove the global process set")
    try:
        _c.remove_process_set(process_set.process_set_id)
    except _c.Error as error:
        if error.status != _c.NOT_FOUND:
            raise translate_error(error) from None
        if _registered.get(process_set.process_set_id) is not process_set:
            return False
        # The other ranks removed it while this one was blocked in join(): it is gone here too.
    _registered.pop(process_set.process_set_id, None)
    process_set._invalidate()
    return True
