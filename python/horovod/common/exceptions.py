"""horovod.common.exceptions: the same classes as hvd.exceptions."""
from hvd.exceptions import HorovodInternalError, HostsUpdatedInterrupt

__all__ = ["HorovodInternalError", "HostsUpdatedInterrupt"]
