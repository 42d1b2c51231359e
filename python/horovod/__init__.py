"""Compatibility package: ``import horovod.torch as hvd`` runs on hvd (see hvd.torch), and
``horovod.run`` launches a function on N ranks through hvdrun (see hvd.runner)."""
from horovod.runner import run

# The Horovod release whose API this package provides (docs/python.md): scripts gate features
# on it (`LooseVersion(horovod.__version__) >= "0.21"`). hvd's own build: `hvdrun --version`.
__version__ = "0.28.1"

__all__ = ["run"]
