"""Exceptions shared by every framework binding (Horovod's horovod.common.exceptions)."""


class HorovodInternalError(RuntimeError):
    """A collective operation failed: a mismatch between ranks, a dead peer, a timeout or a
    shutdown. Elastic training restores the last committed state when it sees this."""


class HostsUpdatedInterrupt(RuntimeError):
    """Raised by ``State.commit()`` when the set of hosts changed and training must reset.

    ``skip_sync`` is True when hosts were only removed, so the surviving ranks' state is
    already consistent and need not be broadcast again.
    """

    def __init__(self, skip_sync: bool) -> None:
        super().__init__("hosts were updated")
        self.skip_sync = skip_sync
