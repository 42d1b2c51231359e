"""horovod.common.util helpers that Horovod's tests and scripts import."""
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


# Horovod's framework extensions and the hvd module that provides each.
_EXTENSIONS = {"horovod.torch": "hvd.torch"}


def check_extension(ext_name: str, ext_env_var: str, pkg_path: str, *args: str) -> None:
    """Horovod's check that a framework extension was built: returns when it can be used and
    raises ImportError (Horovod's message) otherwise. hvd provides horovod.torch only; its
    runtime is found as hvd._hvd_c finds it (docs/python.md)."""
    module = _EXTENSIONS.get(ext_name)
    if module is not None:
        try:
            import hvd._runtime  # noqa: F401  (loads libhvd; the extension is usable)
            return
        except ImportError as error:
            raise ImportError(f"Extension {ext_name} has not been built: {error}") from error
    raise ImportError(
        f"Extension {ext_name} has not been built. If this is not expected, reinstall Horovod "
        f"with {ext_env_var}=1 to debug the build error.")


def gpu_available(ext_base_name: str, verbose: bool = False) -> bool:
    """Horovod's check that the framework sees a GPU hvd can use: for "torch", a CUDA device
    is visible and this hvd was built with its GPU path (docs/gpu.md); False for frameworks
    hvd does not provide. `verbose` prints why not."""
    why = ""
    if ext_base_name != "torch":
        why = f"hvd provides no {ext_base_name} extension"
    else:
        import torch
        from hvd.basics import cuda_built
        if not cuda_built():
            why = "this hvd was built without CUDA and NCCL (hvdrun -cb)"
        elif not torch.cuda.is_available():
            why = "torch sees no CUDA device"
    if why and verbose:
        print(f"gpu_available({ext_base_name!r}): False: {why}")
    return not why
