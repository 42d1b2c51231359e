"""horovod.runner: Horovod's programmatic launcher, on hvdrun (see hvd.runner)."""
from hvd.runner import run

__all__ = ["run"]
