"""The installed layout works on its own, as a user gets it after the README's first command.

Given this build installed into its prefix (done here), when the
README's tools and the Python package are run with a clean environment from a scratch
directory, then every `hvd-*` tool the README shows is on PATH from the prefix, `import
hvd.torch` finds the installed package and runtime, and the timeline example of
docs/timeline.md runs.
"""
import os
import re
import subprocess

import pytest

BUILD = os.environ["HVD_TEST_BUILD_DIR"]
SOURCE = os.environ["HVD_TEST_SOURCE_DIR"]
PREFIX = os.environ["HVD_TEST_PREFIX"]
PYTHON = os.environ["HVD_TEST_PYTHON"]
BIN = os.path.join(PREFIX, "bin")


@pytest.fixture(scope="module")
def installed():
    # CTest keeps the cluster tests (which use the installed package too) from running at the
    # same time (RESOURCE_LOCK hvd_install); developers sharing a machine serialize installs
    # themselves.
    subprocess.run(["cmake", "--install", BUILD], check=True, stdout=subprocess.DEVNULL,
                   timeout=300)
    subprocess.run(["ldconfig"], check=False, timeout=60)


def run(args, cwd, timeout=120):
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
           "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"{args}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    for path in (BUILD, SOURCE):
        assert path not in result.stdout + result.stderr, f"{args} used {path}"
    return result.stdout


def readme_tools():
    with open(os.path.join(SOURCE, "README.md")) as f:
        text = f.read()
    # hvd-<tool> names the README runs (host names like hvd-h1 and hvd-cluster are not tools).
    names = set(re.findall(r"\bhvd-[a-z][a-z-]*[a-z]\b", text))
    return sorted(n for n in names if not n.startswith(("hvd-h", "hvd-cluster", "hvd-rank",
                                                        "hvd-on", "hvd-tcp")))


def test_every_readme_tool_is_installed(installed, tmp_path):
    tools = readme_tools()
    assert {"hvd-bench", "hvd-step-bench", "hvd-timeline", "hvd-agent"} <= set(tools), tools
    for tool in tools + ["hvdrun"]:
        found = run(["sh", "-c", f"command -v {tool}"], tmp_path).strip()
        assert found == os.path.join(BIN, tool)


def test_installed_python_package_loads_the_installed_runtime(installed, tmp_path):
    out = run([PYTHON, "-c", "import hvd.torch, hvd.basics; "
               "print(hvd.torch.__file__); print(hvd.basics.runtime_library)"], tmp_path)
    package, library = out.split()
    assert package.startswith(PREFIX + "/"), package
    assert library.startswith(PREFIX + "/"), library


def test_readme_timeline_example_runs_from_the_installed_tools(installed, tmp_path):
    run(["hvdrun", "-np", "2", "--timeline", "ex.json", "--timeline-all-ranks", "hvd-step-bench",
         "--steps", "3", "--tensors", "2", "--bytes", "4K"], tmp_path)
    summary = run(["hvd-timeline", "summary", "ex.json"], tmp_path)
    assert "ALLREDUCE" in summary


def test_hvdrun_starts_python_workers_from_the_installed_package(installed, tmp_path):
    out = run(["hvdrun", "-np", "2", PYTHON, "-c",
               "import torch, hvd.torch as hvd; hvd.init(); "
               "print(int(hvd.allreduce(torch.ones(1), op=hvd.Sum).item()), hvd.size())"],
              tmp_path)
    assert out.count("2 2") == 2, out
    run(["hvdrun", "-np", "2", "hvd-bench", "--sizes", "4K", "--rounds", "2", "--round-seconds", "0.05"], tmp_path)


def test_horovods_launcher_names_run_the_installed_hvdrun(installed, tmp_path):
    # `horovodrun` (Horovod's console script) and `python -m horovod.runner.launch`, as job
    # scripts written for Horovod call them.
    assert run(["sh", "-c", "command -v horovodrun"], tmp_path).strip() == \
        os.path.join(BIN, "horovodrun")
    script = ("import torch, horovod.torch as hvd; hvd.init(); "
              "print('sum', int(hvd.allreduce(torch.ones(1), op=hvd.Sum).item()))")
    out = run(["horovodrun", "-np", "2", "-H", "localhost:2", PYTHON, "-c", script], tmp_path)
    assert out.count("sum 2") == 2, out
    out = run([PYTHON, "-m", "horovod.runner.launch", "-np", "2", PYTHON, "-c", script], tmp_path)
    assert out.count("sum 2") == 2, out
