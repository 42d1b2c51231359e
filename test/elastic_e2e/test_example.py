"""examples/torch_elastic.py trains through a scale-down and a scale-up to the accuracy of a
fixed-size run of the same script.

The example is run unchanged. Its --epoch-log is a FIFO the test reads, one epoch line at a
time: rank 0 blocks opening it until the test is ready for the next line, which lines the
discovery schedule up with hvdrun's own steps instead of with wall-clock time. A new worker
imports torch before hvdrun announces it (2-3 s here, more under load: seconds of epochs), so
without the gate the scale-up could land after the last epoch (it did, 1 run in 4-5 on a loaded
2-core machine)."""
import json
import os
import subprocess
import threading
import time

from elastic_harness import HVDRUN, PYTHON, require_hvdrun

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "torch_elastic.py")
EPOCHS = 10
TIMEOUT = 300


def final_accuracy(out):
    lines = [l for l in out.splitlines() if "test accuracy" in l]
    assert lines, out
    return float(lines[-1].split()[-1])


class Stream(threading.Thread):
    """Collects one of hvdrun's output streams as it arrives; wait_for() blocks (bounded)
    until a text has appeared in it."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe, self.text, self.cond = pipe, "", threading.Condition()
        self.closed = False
        self.start()

    def run(self):
        for line in self.pipe:
            with self.cond:
                self.text += line
                self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def wait_for(self, needle, deadline):
        with self.cond:
            while needle not in self.text and not self.closed:
                if not self.cond.wait(max(0.0, deadline - time.monotonic())):
                    break
            return needle in self.text


class EpochGate(threading.Thread):
    """Reads the example's epoch lines from the FIFO into the log file the discovery script
    counts. Before it takes line k (1-based) it waits until hvdrun's stderr shows gates[k]:
    until then rank 0 is held at the end of that epoch, opening the FIFO."""

    def __init__(self, fifo, log, stderr, gates, deadline):
        super().__init__(daemon=True)
        self.fifo, self.log, self.stderr, self.gates = fifo, log, stderr, gates
        self.deadline, self.missed, self.stop = deadline, [], False
        self.start()

    def run(self):
        for k in range(1, EPOCHS + 1):
            needle = self.gates.get(k)
            if needle and not self.stderr.wait_for(needle, self.deadline):
                self.missed.append((k, needle))
            if self.stop:
                return
            with open(self.fifo) as f:  # blocks until rank 0 opens it for the next line
                if self.stop:
                    return
                lines = f.read()
            with open(self.log, "a") as f:
                f.write(lines)


def test_example_scales_down_and_up_to_the_fixed_size_accuracy(tmp_path):
    require_hvdrun()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    fixed = subprocess.run([HVDRUN, "-np", "2", PYTHON, EXAMPLE, "--epochs", str(EPOCHS),
                            "--min-accuracy", "0.9"],
                           capture_output=True, text=True, timeout=TIMEOUT, env=env)
    assert fixed.returncode == 0, fixed.stderr[-3000:]

    epochs = tmp_path / "epochs.jsonl"
    fifo = tmp_path / "epochs.fifo"
    os.mkfifo(fifo)
    script = tmp_path / "discover.sh"
    # 2 hosts for two epochs, then one, then two again (a third name for this machine).
    script.write_text(
        "#!/bin/sh\nn=$(cat %s 2>/dev/null | wc -l)\n"
        "if [ $n -lt 2 ]; then echo localhost:1; echo 127.0.0.1:1;\n"
        "elif [ $n -lt 4 ]; then echo localhost:1;\n"
        "else echo localhost:1; echo 127.0.0.2:1; fi\n" % epochs)
    script.chmod(0o755)
    proc = subprocess.Popen(
        [HVDRUN, "--verbose", "-np", "2", "--min-np", "1", "--max-np", "2",
         "--host-discovery-script", str(script), "--host-discovery-interval", "0.1", PYTHON,
         EXAMPLE, "--epochs", str(EPOCHS), "--epoch-log", str(fifo), "--min-accuracy", "0.9"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + TIMEOUT
    out, err = Stream(proc.stdout), Stream(proc.stderr)
    # Epoch 3 ends once hvdrun has dropped 127.0.0.1 (gone from discovery after epoch 2);
    # epoch 5 once the worker on 127.0.0.2 (listed after epoch 4) is ready and announced.
    gate = EpochGate(fifo, epochs, err, {
        3: "removing worker 1 from the job: host 127.0.0.1 is no longer available",
        5: "new worker(s) ready: announcing the host change"}, deadline)
    try:
        returncode = proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        gate.stop = True  # if hvdrun ended early, free the gate from its open() of the FIFO
        for _ in range(100):
            if not gate.is_alive():
                break
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # ENXIO: the gate is not in open() at this moment
                pass
            gate.join(0.1)
        out.join(10)
        err.join(10)
    describe = "exit %s\nstdout:\n%s\nstderr:\n%s" % (returncode, out.text[-3000:],
                                                      err.text[-3000:])
    assert returncode == 0, describe
    assert not gate.missed, (gate.missed, describe)
    sizes = [json.loads(l)["size"] for l in epochs.read_text().splitlines()]
    assert len(sizes) == EPOCHS, (sizes, describe)
    down = sizes.index(1)
    assert sizes[0] == 2 and 2 in sizes[down:], (sizes, describe)  # 2 ... 1 ... 2
    assert abs(final_accuracy(out.text) - final_accuracy(fixed.stdout)) <= 0.02, (
        out.text, fixed.stdout)
