"""Programmatic launch: Horovod's ``horovod.run`` / ``horovod.runner.run`` on hvdrun.

``run(func, args, kwargs, num_proc=N, hosts=..., ...)`` starts ``hvdrun`` with the equivalent
flags; every rank unpickles ``func``, calls it, and pickles its return value back; ``run``
returns the list of return values in rank order. The function travels by cloudpickle (as in
Horovod), so a lambda or a local function works; it must call ``hvd.init()`` itself when it
uses collectives. The pickled function and the results pass through a temporary directory
that every host must see at the same path (a shared file system, like the hvd installation
itself; a single-host run needs nothing). The ranks get the caller's sys.path (minus the
interpreter's own directories) in PYTHONPATH, so a function defined in any module the caller
imported is found there too.
"""
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import warnings
from typing import Any, Callable, List, Optional, Sequence

try:
    import cloudpickle as _pickler
except ImportError:  # pragma: no cover - python3-cloudpickle is in scripts/packages.txt
    _pickler = pickle

_TASK_MODULE = "hvd.runner.task"


def find_hvdrun() -> str:
    """The hvdrun that belongs to this package: $HVD_HVDRUN, the prefix this package is
    installed under (<prefix>/lib/pythonX.Y/dist-packages/hvd -> <prefix>/bin), the build tree
    it was built in (<build>/python/hvd -> <build>/cmd), then PATH."""
    named = os.environ.get("HVD_HVDRUN")
    if named:
        return named
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../hvd
    candidates = [os.path.join(package, "..", "..", "..", "..", "bin", "hvdrun"),
                  os.path.join(package, "..", "..", "cmd", "hvdrun")]
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    found = shutil.which("hvdrun")
    if found:
        return found
    raise FileNotFoundError("hvdrun not found: install hvd (scripts/build.sh) or set HVD_HVDRUN "
                            "to its path")


def _deprecated(new_value, old_value, old: str, new: str):
    if old_value is None:
        return new_value
    warnings.warn(f"{old} is deprecated, use {new} instead", DeprecationWarning, stacklevel=3)
    return old_value if new_value is None else new_value


def _flags(num_proc, min_num_proc, max_num_proc, slots, reset_limit, cooldown_range, hosts,
           hostfile, host_discovery_script, start_timeout, ssh_port, ssh_identity_file,
           disable_cache, output_filename, verbose, use_gloo, use_mpi, mpi_args,
           network_interfaces) -> List[str]:
    # Without num_proc, hvdrun's own defaults decide (-np = --min-np, or the slots of -H /
    # --hostfile); a fixed 1 here overrode them (hosts="localhost:3" ran one rank, min_num_proc=2
    # failed "-np: must be >= --min-np"). With nothing to decide from, one rank, as before.
    decided = any(v is not None for v in (min_num_proc, hosts, hostfile, host_discovery_script))
    flags = [] if num_proc is None and decided else ["-np", str(num_proc or 1)]
    valued = [("--min-np", min_num_proc), ("--max-np", max_num_proc),
              ("--slots-per-host", slots), ("--reset-limit", reset_limit),
              ("-H", hosts), ("--hostfile", hostfile),
              ("--host-discovery-script", host_discovery_script),
              ("--start-timeout", start_timeout), ("-p", ssh_port),
              ("-i", ssh_identity_file), ("--output-filename", output_filename),
              ("--mpi-args", mpi_args)]
    for flag, value in valued:
        if value is not None:
            flags += [flag, str(value)]
    if cooldown_range is not None:
        low, high = cooldown_range
        flags += ["--blacklist-cooldown-range", str(low), str(high)]
    if network_interfaces:
        if isinstance(network_interfaces, str):
            network_interfaces = [network_interfaces]
        flags += ["--network-interface", ",".join(network_interfaces)]
    for flag, on in (("--disable-cache", disable_cache), ("--verbose", verbose),
                     ("--gloo", use_gloo), ("--mpi", use_mpi)):
        if on:
            flags.append(flag)
    return flags


def run(func: Callable, args: Sequence = (), kwargs: Optional[dict] = None,
        num_proc: Optional[int] = None, min_num_proc: Optional[int] = None,
        max_num_proc: Optional[int] = None, slots: Optional[int] = None,
        reset_limit: Optional[int] = None, cooldown_range=None, hosts: Optional[str] = None,
        hostfile: Optional[str] = None, start_timeout: Optional[int] = None,
        ssh_port: Optional[int] = None, ssh_identity_file: Optional[str] = None,
        disable_cache: Optional[bool] = None, output_filename: Optional[str] = None,
        verbose: Optional[int] = None, use_gloo: Optional[bool] = None,
        use_mpi: Optional[bool] = None, mpi_args: Optional[str] = None,
        network_interfaces=None, executable: Optional[str] = None, np: Optional[int] = None,
        min_np: Optional[int] = None, max_np: Optional[int] = None,
        host_discovery_script: Optional[str] = None, network_interface=None) -> List[Any]:
    """Runs ``func(*args, **kwargs)`` on every rank of an hvdrun job and returns the list of
    return values, indexed by rank. Parameters are horovod.run's; each maps to the hvdrun flag
    of the same meaning (``num_proc`` -> ``-np``, ``hosts`` -> ``-H``, ``use_gloo`` ->
    ``--gloo``, ...). Raises RuntimeError when the job fails (hvdrun's exit code and summary
    are in the message; the ranks' output went to this process's stdout/stderr)."""
    num_proc = _deprecated(num_proc, np, "np", "num_proc")
    min_num_proc = _deprecated(min_num_proc, min_np, "min_np", "min_num_proc")
    max_num_proc = _deprecated(max_num_proc, max_np, "max_np", "max_num_proc")
    network_interfaces = _deprecated(network_interfaces, network_interface,
                                     "network_interface", "network_interfaces")
    flags = _flags(num_proc, min_num_proc, max_num_proc, slots, reset_limit, cooldown_range,
                   hosts, hostfile, host_discovery_script, start_timeout, ssh_port,
                   ssh_identity_file, disable_cache, output_filename, verbose, use_gloo, use_mpi,
                   mpi_args, network_interfaces)
    with tempfile.TemporaryDirectory(prefix="hvd-run-") as workdir:
        payload = os.path.join(workdir, "func.pkl")
        with open(payload, "wb") as f:
            _pickler.dump((func, tuple(args), dict(kwargs or {})), f)
        command = [find_hvdrun()] + flags + [executable or sys.executable, "-m", _TASK_MODULE,
                                              payload, workdir]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(_worker_path() + (
            [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        completed = subprocess.run(command, env=env, stderr=subprocess.PIPE, text=True)
        sys.stderr.write(completed.stderr)
        if completed.returncode != 0:
            tail = completed.stderr.strip().splitlines()[-12:]
            raise RuntimeError(f"hvd.runner.run: hvdrun exited {completed.returncode}\n" +
                               "\n".join(tail))
        return _collect(workdir)


def _worker_path() -> List[str]:
    """This interpreter's sys.path minus its own standard library and site directories, so the
    ranks import what the caller can (its script's folder, its working directory, this
    package): cloudpickle sends importable functions by reference, as Horovod does."""
    own = tuple(os.path.join(prefix, "lib") for prefix in {sys.prefix, sys.base_prefix})
    path = []
    for entry in sys.path:
        entry = os.path.abspath(entry or os.getcwd())
        if os.path.isdir(entry) and not entry.startswith(own) and entry not in path:
            path.append(entry)
    return path


def _collect(workdir: str) -> List[Any]:
    ranks = sorted(int(name.split(".", 1)[1]) for name in os.listdir(workdir)
                   if name.startswith("result."))
    results = []
    for rank in ranks:
        with open(os.path.join(workdir, f"result.{rank}"), "rb") as f:
            results.append(pickle.load(f))
    return results
