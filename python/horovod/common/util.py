"""horovod.common.util helpers that Horovod's tests import."""
import contextlib
import os
from typing import Iterator


@contextlib.contextmanager
def env(**kwargs: str) -> Iterator[None]:
    """Sets environment variables for the duration of the block, restoring the previous
    values (or absence) afterwards."""
    previous = {key: os.environ.get(key) for key in kwargs}
    os.environ.update({key: str(value) for key, value in kwargs.items()})
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
