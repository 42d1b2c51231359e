"""horovod.runner.launch: Horovod's command-line entry point (`horovodrun`,
`python -m horovod.runner.launch`), which is hvdrun here: the arguments go to hvdrun unchanged."""
import os
import sys

from hvd.runner import find_hvdrun

__all__ = ["run_commandline"]


def run_commandline(args=None):
    """Replaces this process with `hvdrun ARGS` (sys.argv[1:] by default)."""
    argv = list(sys.argv[1:] if args is None else args)
    hvdrun = find_hvdrun()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(hvdrun, ["horovodrun", *argv])


if __name__ == "__main__":
    run_commandline()
