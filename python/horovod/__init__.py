"""Compatibility package: ``import horovod.torch as hvd`` runs on hvd (see hvd.torch), and
``horovod.run`` launches a function on N ranks through hvdrun (see hvd.runner)."""
from horovod.runner import run

__all__ = ["run"]
