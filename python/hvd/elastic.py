"""Framework-independent elastic training state (Horovod's horovod.common.elastic).

``State`` holds what must survive a reset: ``commit()`` saves it (and checks for host
updates), ``restore()`` rolls back to the last commit after a failed collective, ``sync()``
makes every rank equal to rank 0. ``run_fn`` wraps the training function in the
retry loop.

Host updates: under ``hvdrun --elastic`` rank 0 asks hvdrun's elastic driver (over the job's
authenticated control channel, one request) for its latest host change in every
``check_host_updates()``, and broadcasts what it saw, so every rank raises
``HostsUpdatedInterrupt`` at the same commit. Updates delivered through ``on_hosts_updated``
(Horovod's notification-service callback) are honoured too. After every (re-)init the state
starts from the host-change timestamp its round already reflects, so a worker that joins, or
a round formed for another reason, does not react to a change that is already in force.

This module needs no framework: the PyTorch pieces (``run``, ``TorchState``,
``ElasticSampler``) live in hvd.torch.elastic, which builds on this one, never the other way.
"""
import enum
import functools
import os
import queue
import sys
from typing import Any, Callable, Dict, List

from hvd.exceptions import HorovodInternalError, HostsUpdatedInterrupt

# In the error hvd.init() raises when hvdrun's elastic driver removed this worker.
_REMOVED = "has been removed from the elastic job"


class HostUpdateResult(enum.IntFlag):
    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


class State:
    """Base of elastic states. Subclasses implement save/restore/sync."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int]) -> None:
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._host_messages: "queue.Queue" = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks: List[Callable[[], None]] = []

    def register_reset_callbacks(self, callbacks: List[Callable[[], None]]) -> None:
        self._reset_callbacks.extend(callbacks)

    def on_reset(self) -> None:
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp: int, update_res: HostUpdateResult) -> None:
        self._host_messages.put((timestamp, update_res))

    def commit(self) -> None:
        """Saves the state and raises HostsUpdatedInterrupt if the hosts changed."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self) -> None:
        if self._rank() == 0:
            driver_update = _driver_host_update()
            if driver_update is not None and driver_update[0] > self._last_updated_timestamp:
                self._host_messages.put((driver_update[0], HostUpdateResult(driver_update[1])))
        last_updated = prev_timestamp = self._last_updated_timestamp
        all_update = HostUpdateResult.no_update
        while not self._host_messages.empty():
            timestamp, update = self._host_messages.get()
            if timestamp > last_updated:
                last_updated = timestamp
                all_update |= update
        # Every rank must raise together: agree on rank 0's view.
        prev_timestamp, self._last_updated_timestamp, all_update = self._bcast_object(
            (prev_timestamp, last_updated, int(all_update)))
        if self._last_updated_timestamp > prev_timestamp:
            raise HostsUpdatedInterrupt(all_update == HostUpdateResult.removed)

    def save(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        pass


class ObjectState(State):
    """State made of plain attributes given as keyword arguments (data-only values: they are
    synchronized with broadcast_object)."""

    def __init__(self, bcast_object: Callable[[Any], Any], get_rank: Callable[[], int],
                 **kwargs: Any) -> None:
        self._bcast_object = bcast_object
        self._saved_state: Dict[str, Any] = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self) -> None:
        self._saved_state = {attr: getattr(self, attr) for attr in self._saved_state}

    def restore(self) -> None:
        self._set_attrs()

    def sync(self) -> None:
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self) -> None:
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)


def elastic_enabled() -> bool:
    """True when the launcher runs this worker under its elastic driver."""
    return os.environ.get("HVD_ELASTIC", os.environ.get("HOROVOD_ELASTIC", "")) == "1"


def _driver_worker() -> bool:
    return elastic_enabled() and os.environ.get("HVD_ELASTIC_WORKER_ID", "") != ""


def _driver_host_update():
    """(timestamp, flags) of hvdrun's latest host change; None outside its elastic driver."""
    if not _driver_worker():
        return None
    from hvd import _hvd_c as _c  # loads libhvd; only workers under hvdrun get here
    try:
        return _c.elastic_host_update()
    except _c.Error as error:
        # hvdrun's server did not answer: no update seen this time, and training goes on (the
        # error escaped commit() on rank 0 only until 2026-12-02, ending it alone while the
        # others waited in the commit's broadcast). Said once.
        global _host_update_warned
        if not _host_update_warned:
            _host_update_warned = True
            print(f"hvd.elastic: rank 0 could not ask hvdrun for host updates: {error}; "
                  "going on without them", file=sys.stderr, flush=True)
        return None


_host_update_warned = False


def _driver_round():
    """(round, joined, hosts_timestamp) of the round this worker is in; None outside one."""
    if not _driver_worker():
        return None
    from hvd import _hvd_c as _c
    try:
        return _c.elastic_round()
    except _c.Error:
        return None


def _synced() -> None:
    """Tells hvdrun's elastic driver that this worker holds the round's state (after a
    successful sync): a round that fails is then re-formed only around such workers, so a
    joiner that never got the state cannot restart training from its own initial state."""
    if not _driver_worker():
        return
    from hvd import _hvd_c as _c
    try:
        _c.elastic_synced()
    except _c.Error:
        pass  # not in a round (a script driving init itself): nothing to report


def _enter_round(state: State) -> bool:
    """Aligns `state` with the round just joined; returns True when a member is new (then
    everyone syncs from rank 0, even survivors of a pure removal: Horovod #3494)."""
    current = _driver_round()
    if current is None:
        return False
    _, joined, hosts_timestamp = current
    state._host_messages = queue.Queue()
    state._last_updated_timestamp = max(state._last_updated_timestamp, hosts_timestamp)
    return joined


def _every_rank_skips_sync(mine: bool) -> bool:
    """Whether the state sync after a reset is skipped, agreed by every rank of the new round:
    each rank's own answer comes from its HostsUpdatedInterrupt (or a failure), and a peer that
    died during check_host_updates' broadcast left some ranks with skip_sync=True and others
    with a HorovodInternalError; those then synced while these trained, a stall until the
    stall shutdown (until 2026-12-02; Horovod's ranks decide alone too). Only in a round
    without newcomers, where every member came through a reset (a newcomer syncs anyway)."""
    import array  # not numpy: hvd.torch works without it

    from hvd import _hvd_c as _c
    from hvd.basics import Min
    flag, agreed = array.array("i", [1 if mine else 0]), array.array("i", [0])
    try:
        _c.allreduce_now(flag, agreed, _c.INT32, (1,), "hvd.elastic.skip_sync", Min, 1.0, 1.0, 0)
    except _c.Error as error:
        raise HorovodInternalError(str(error)) from None
    return agreed[0] == 1


def run_fn(func: Callable, reset: Callable[[], None]) -> Callable:
    """Wraps ``func(state, ...)``: syncs the state, runs func, and on a failed collective
    restores the last commit. Under the elastic driver (HVD_ELASTIC=1) it then resets the
    runtime and retries; otherwise it re-raises, since there is no driver to re-form the job."""

    @functools.wraps(func)
    def wrapper(state: State, *args: Any, **kwargs: Any) -> Any:
        skip_sync = False
        _enter_round(state)
        while True:
            try:
                if not skip_sync:
                    state.sync()
                    # What was synced is what a failure restores: a worker that joined would
                    # otherwise restore its own initial model (only commit() saved), and, as
                    # hvdrun counts it as holding the state from here on, hand it to the whole
                    # job after the older workers were lost (until 2026-12-01).
                    state.save()
                    _synced()
                return func(state, *args, **kwargs)
            except HorovodInternalError as error:
                state.restore()
                if not elastic_enabled():
                    raise HorovodInternalError(
                        f"{error} (the state was restored to the last commit; retrying needs "
                        "hvdrun's elastic driver: launch with hvdrun --elastic, --min-np or "
                        "--host-discovery-script)") from error
                skip_sync = False
            except HostsUpdatedInterrupt as interrupt:
                skip_sync = interrupt.skip_sync
            while True:
                try:
                    reset()
                except RuntimeError as error:
                    if _REMOVED in str(error):  # the driver left this worker out: just leave
                        raise SystemExit(f"hvd.elastic: {error}") from None
                    raise
                joined = _enter_round(state)
                if joined:
                    skip_sync = False
                try:
                    state.on_reset()
                    if not joined:
                        skip_sync = _every_rank_skips_sync(skip_sync)
                    break
                except HorovodInternalError:
                    # A collective of a reset callback lost a peer: another reset, as for a
                    # failure in training (until 2026-12-02 the error ended this worker, and
                    # its host was blacklisted for a peer's death).
                    state.restore()
                    skip_sync = False

    return wrapper
