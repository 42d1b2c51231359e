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


def extension_available(ext_base_name: str, verbose: bool = False) -> bool:
    """Horovod's check that a framework extension can be used: True for torch (hvd.torch)."""
    try:
        check_extension(f"horovod.{ext_base_name}", f"HOROVOD_WITH_{ext_base_name.upper()}",
                        "")
        return True
    except ImportError as error:
        if verbose:
            print(error)
        return False


def split_list(values: list, num_parts: int) -> list:
    """Horovod's split_list: `values` in `num_parts` consecutive pieces, the first ones one
    longer when it does not divide evenly."""
    d, r = divmod(len(values), num_parts)
    return [values[i * d + min(i, r):(i + 1) * d + min(i + 1, r)] for i in range(num_parts)]


def num_rank_is_power_2(num_rank: int) -> bool:
    """Horovod's check that a number of ranks is a power of 2 (0 is not)."""
    return num_rank != 0 and (num_rank & (num_rank - 1)) == 0


def is_iterable(x) -> bool:
    try:
        iter(x)
    except TypeError:
        return False
    return True


def get_average_backwards_compatibility_fun(reduce_ops):
    """Horovod's factory of handle_average_backwards_compatibility for a framework's ops."""
    def handle_average_backwards_compatibility(op, average):
        if op is not None:
            if average is not None:
                raise ValueError("The op parameter supersedes average. Please provide only one "
                                 "of them.")
            return op
        if average is not None:
            import warnings
            warnings.warn("Parameter `average` has been replaced with `op` and will be removed "
                          "in v1.0", DeprecationWarning)
            return reduce_ops.Average if average else reduce_ops.Sum
        return reduce_ops.Average
    return handle_average_backwards_compatibility
