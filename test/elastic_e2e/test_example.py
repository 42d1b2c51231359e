"""examples/torch_elastic.py trains through a scale-down and a scale-up to the accuracy of a
fixed-size run of the same script."""
import json
import os
import subprocess

from elastic_harness import HVDRUN, PYTHON, require_hvdrun

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "torch_elastic.py")
EPOCHS = "10"


def final_accuracy(out):
    lines = [l for l in out.splitlines() if "test accuracy" in l]
    assert lines, out
    return float(lines[-1].split()[-1])


def test_example_scales_down_and_up_to_the_fixed_size_accuracy(tmp_path):
    require_hvdrun()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    fixed = subprocess.run([HVDRUN, "-np", "2", PYTHON, EXAMPLE, "--epochs", EPOCHS,
                            "--min-accuracy", "0.9"],
                           capture_output=True, text=True, timeout=300, env=env)
    assert fixed.returncode == 0, fixed.stderr[-3000:]

    epochs = tmp_path / "epochs.jsonl"
    script = tmp_path / "discover.sh"
    # 2 hosts for two epochs, then one, then two again (a third name for this machine).
    script.write_text(
        "#!/bin/sh\nn=$(cat %s 2>/dev/null | wc -l)\n"
        "if [ $n -lt 2 ]; then echo localhost:1; echo 127.0.0.1:1;\n"
        "elif [ $n -lt 4 ]; then echo localhost:1;\n"
        "else echo localhost:1; echo 127.0.0.2:1; fi\n" % epochs)
    script.chmod(0o755)
    elastic = subprocess.run(
        [HVDRUN, "-np", "2", "--min-np", "1", "--max-np", "2", "--host-discovery-script",
         str(script), "--host-discovery-interval", "0.1", PYTHON, EXAMPLE, "--epochs", EPOCHS,
         "--epoch-log", str(epochs), "--min-accuracy", "0.9"],
        capture_output=True, text=True, timeout=300, env=env)
    assert elastic.returncode == 0, elastic.stderr[-3000:]
    sizes = [json.loads(l)["size"] for l in epochs.read_text().splitlines()]
    assert len(sizes) == int(EPOCHS), sizes
    down = sizes.index(1)
    assert sizes[0] == 2 and 2 in sizes[down:], sizes  # 2 ... 1 ... 2
    assert abs(final_accuracy(elastic.stdout) - final_accuracy(fixed.stdout)) <= 0.02, (
        elastic.stdout, fixed.stdout)
