"""Loads libhvd and maps its errors: the leaf every other module of the hvd package imports.

Importing this module loads the runtime library through hvd._hvd_c (see
``runtime_library_candidates``). It imports nothing else from hvd, so basics, process_sets and
the framework bindings can all depend on it without an import circle.
"""
import os
import warnings
from typing import List

from hvd import _hvd_c as _c

NOT_INITIALIZED_MESSAGE = "Horovod has not been initialized; use hvd.init()."


def runtime_library_candidates() -> List[str]:
    """Paths tried, in order, to load libhvd: $HVD_RUNTIME_LIBRARY (set by hvdrun to the
    runtime it was built with), then the copy installed beside this package."""
    candidates = []
    named = os.environ.get("HVD_RUNTIME_LIBRARY", "")
    if named:
        candidates.append(named)
    lib_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")
    candidates += [os.path.join(lib_dir, "libhvd.so.0"), os.path.join(lib_dir, "libhvd.so")]
    return candidates


def _load_runtime() -> str:
    candidates = runtime_library_candidates()
    path = _c.load(candidates)
    named = os.environ.get("HVD_RUNTIME_LIBRARY", "")
    if named and path != named:
        warnings.warn(f"HVD_RUNTIME_LIBRARY={named!r} could not be loaded; using {path!r}",
                      RuntimeWarning)
    return path


runtime_library = _load_runtime()


def translate_error(error: "_c.Error") -> Exception:
    """Maps a failed libhvd call outside a collective to the exception Horovod raises."""
    if error.status == _c.NOT_INITIALIZED:
        return ValueError(NOT_INITIALIZED_MESSAGE)
    if error.status in (_c.INVALID_ARGUMENT, _c.PRECONDITION_FAILED, _c.NOT_FOUND):
        return ValueError(str(error))
    return RuntimeError(str(error))
