"""How hvd._hvd_c finds libhvd: HVD_RUNTIME_LIBRARY first, then the copy beside the package;
a clear ImportError naming every path tried otherwise. Each case runs in a fresh interpreter."""
import os
import shutil
import subprocess
import sys

import pytest

import hvd


def _run(code, env_updates, pythonpath):
    env = dict(os.environ)
    env.pop("HVD_RUNTIME_LIBRARY", None)
    for key, value in env_updates.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    env["PYTHONPATH"] = pythonpath
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)


PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(hvd.__file__)))


def _runtime_library():
    import hvd.basics
    return hvd.basics.runtime_library


def test_loads_the_library_named_by_hvdrun():
    library = os.path.realpath(_runtime_library())
    result = _run("import hvd.basics; print(hvd.basics.runtime_library)",
                  {"HVD_RUNTIME_LIBRARY": library}, PACKAGE_ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == library


def test_missing_library_names_every_path_tried(tmp_path):
    package = tmp_path / "hvd"
    shutil.copytree(os.path.dirname(hvd.__file__), package,
                    ignore=shutil.ignore_patterns("lib", "__pycache__"))
    result = _run("import hvd.torch", {"HVD_RUNTIME_LIBRARY": "/nonexistent/libhvd.so"},
                  str(tmp_path))
    assert result.returncode != 0
    assert "ImportError" in result.stderr
    for path in ["/nonexistent/libhvd.so", str(package / "lib" / "libhvd.so.0"),
                 str(package / "lib" / "libhvd.so")]:
        assert path in result.stderr


def test_falls_back_to_packaged_copy_with_a_warning(tmp_path):
    package = tmp_path / "hvd"
    shutil.copytree(os.path.dirname(hvd.__file__), package,
                    ignore=shutil.ignore_patterns("lib", "__pycache__"))
    (package / "lib").mkdir()
    shutil.copy(os.path.realpath(_runtime_library()), package / "lib" / "libhvd.so.0")
    result = _run("import hvd.basics; print(hvd.basics.runtime_library)",
                  {"HVD_RUNTIME_LIBRARY": str(tmp_path / "missing.so")}, str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(package / "lib" / "libhvd.so.0")
    assert "could not be loaded" in result.stderr


def test_not_a_runtime_library_is_rejected(tmp_path):
    if not os.path.exists("/lib/x86_64-linux-gnu/libz.so.1"):
        pytest.skip("no libz to stand in for a foreign library")
    package = tmp_path / "hvd"
    shutil.copytree(os.path.dirname(hvd.__file__), package,
                    ignore=shutil.ignore_patterns("lib", "__pycache__"))
    result = _run("import hvd.basics", {"HVD_RUNTIME_LIBRARY": "/lib/x86_64-linux-gnu/libz.so.1"},
                  str(tmp_path))
    assert result.returncode != 0 and "does not export hvd_" in result.stderr


def test_size_one_without_hvdrun():
    code = ("import torch, hvd.torch as h; h.init(); "
            "print(h.size(), h.rank(), h.allreduce(torch.ones(2), op=h.Sum).tolist())")
    unset = {k: None for k in os.environ if k.startswith(("HVD_", "HOROVOD_"))}
    unset["HVD_RUNTIME_LIBRARY"] = os.path.realpath(_runtime_library())
    result = _run(code, unset, PACKAGE_ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:2] == ["1", "0"]


@pytest.mark.parametrize("module", ["hvd", "hvd.basics", "hvd.process_sets", "hvd.elastic",
                                    "hvd.exceptions", "hvd.numpy"])
def test_framework_independent_modules_never_import_torch(module):
    # Given a fresh interpreter, when a framework-independent module is imported, then neither
    # torch nor hvd.torch has been imported (the hvd package has no circle through hvd.torch).
    code = (f"import sys, {module}; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('hvd.torch')))")
    result = _run(code, {}, PACKAGE_ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout


@pytest.mark.parametrize("controller", [None, "mpi", "gloo"])
def test_a_process_started_alone_reports_the_controller_of_its_launch(controller):
    # Horovod's gloo_enabled()/mpi_enabled() name the controller of a one-rank job too (both were
    # False here until 2026-12-01): hvdrun's rendezvous (the Gloo role) unless the launch is
    # mpirun's or HVD_CONTROLLER=mpi, and MPI only where the build has it.
    code = ("import hvd.basics as b; b.init(); "
            "print(b.size(), b.gloo_enabled(), b.mpi_enabled(), b.mpi_built()); b.shutdown()")
    clean = {k: None for k in os.environ if k.startswith(("HVD_", "HOROVOD_", "OMPI_", "PMI"))}
    result = _run(code, dict(clean, HVD_CONTROLLER=controller), PACKAGE_ROOT)
    assert result.returncode == 0, result.stderr
    size, gloo, mpi, mpi_built = result.stdout.split()
    assert size == "1"
    expect_mpi = controller == "mpi" and mpi_built == "True"
    assert (gloo, mpi) == (str(not expect_mpi), str(expect_mpi)), result.stdout


def test_a_child_forked_after_init_is_refused_and_exits():
    # A child forked after hvd.init() (os.fork(), multiprocessing's fork) has the parent's
    # runtime in memory but not its threads. Until 2026-12-01 its exit hook waited forever for
    # the background thread, and its ops went to the parent's connections; now every call says
    # why it cannot run, and the child exits.
    code = r"""
import os, sys, time
import hvd.basics as b
from hvd import _hvd_c as c
b.init()
pid = os.fork()
if pid == 0:
    try:
        c.barrier(0)
        print("child: a barrier went through")
    except c.Error as error:
        print("child:", error)
    print("child: initialized", b.is_initialized())
    sys.stdout.flush()
    sys.exit(0)  # the exit hooks run: hvd's shutdown among them
deadline = time.time() + 20
while time.time() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("child exit", os.waitstatus_to_exitcode(status))
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print("child hung at its exit")
b.shutdown()
"""
    clean = {k: None for k in os.environ if k.startswith(("HVD_", "HOROVOD_", "OMPI_", "PMI"))}
    result = _run(code, clean, PACKAGE_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "from which this process was forked" in result.stdout, result.stdout
    assert "child: initialized False" in result.stdout, result.stdout
    assert "child exit 0" in result.stdout, result.stdout
