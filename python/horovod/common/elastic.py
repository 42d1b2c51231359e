"""horovod.common.elastic: the same objects as hvd.elastic."""
from hvd.elastic import HostUpdateResult, ObjectState, State, run_fn

__all__ = ["HostUpdateResult", "ObjectState", "State", "run_fn"]
