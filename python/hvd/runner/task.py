"""One rank of hvd.runner.run: ``python -m hvd.runner.task <func.pkl> <result dir>``.

Unpickles (func, args, kwargs), calls it, and writes the pickled return value to
``<result dir>/result.<rank>`` (the runtime's rank when func left it initialized, as in an
elastic job whose ranks change; else HVD_RANK, which hvdrun sets; 0 without it). An
exception propagates, so the rank exits non-zero and hvdrun reports it.
"""
import os
import pickle
import sys

try:
    import cloudpickle as _pickler
except ImportError:  # pragma: no cover
    _pickler = pickle


def main(argv) -> int:
    if len(argv) != 3:
        print("usage: python -m hvd.runner.task <func.pkl> <result dir>", file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        func, args, kwargs = pickle.load(f)
    result = func(*args, **kwargs)
    rank = int(os.environ.get("HVD_RANK", os.environ.get("HOROVOD_RANK", "0")))
    basics = sys.modules.get("hvd.basics")
    if basics is not None and basics.is_initialized():
        rank = basics.rank()  # an elastic job's rank changes with every round
    partial = os.path.join(argv[2], f".result.{rank}.partial")
    with open(partial, "wb") as f:
        _pickler.dump(result, f)
    os.replace(partial, os.path.join(argv[2], f"result.{rank}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
