"""horovod.common.process_sets: the same objects as hvd.process_sets (``from
horovod.common.process_sets import ProcessSet`` in Horovod scripts)."""
from hvd.process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set

__all__ = ["ProcessSet", "add_process_set", "global_process_set", "remove_process_set"]
