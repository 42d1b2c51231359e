#!/usr/bin/python3
"""Elastic recovery, hvd against torchrun, side by side in one run (same machine, same two
local "hosts", /usr/bin/python3 and Debian's torch on both sides).

  bench/elastic_bench.py [--hvdrun build/cmd/hvdrun] [--reps 3]

hvd (bench/elastic_probe.py, one 1 MiB allreduce + commit per step, 2 workers on
"localhost" and "127.0.0.1"):
  failure  worker 1 SIGKILLs itself at step 5:
           detect  = its death -> HorovodInternalError in the survivor
           resume  = that error -> the survivor's first step at the new size (re-init
                     and the state sync included; Horovod measured 0.38 s from the death)
           back    = death -> first step at full size again, with --blacklist-cooldown-range
                     1 2 (Horovod: 5.08 s)
  scale-up one worker trains; the discovery script starts listing a second host:
           join    = the first discovery run that lists it -> the new worker's first step
           pause   = the old worker's last step alone -> its first step with the new one
torchrun (bench/torchrun_elastic_restart.py: rank 1 exits after its first allreduce, the agent
restarts the whole group): restart = the failure -> the restarted group's first allreduce,
with --monitor_interval 0.1 and with the default 5 s.

Prints medians over --reps runs and the ratios. Timing depends on load; compare only rows of
one run.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
STAMP = re.compile(r"STAMP (\w+) ([\d.]+) worker=(-?\d+) rank=(\d+) size=(\d+)")


def stamps(text):
    return [(m.group(1), float(m.group(2)), int(m.group(3)), int(m.group(5)))
            for m in STAMP.finditer(text)]


def first(events, kind, worker=None, size=None, after=0.0):
    for e, t, w, n in events:
        if e == kind and (worker is None or w == worker) and (size is None or n == size) \
                and t >= after:
            return t
    raise RuntimeError("no %s stamp (worker %s, size %s)" % (kind, worker, size))


def run_hvd(hvdrun, hvd_args, probe_args, env=None):
    proc = subprocess.run([hvdrun] + hvd_args + [PYTHON, os.path.join(HERE, "elastic_probe.py")] +
                          probe_args, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, OMP_NUM_THREADS="1", **(env or {})))
    if proc.returncode != 0:
        raise RuntimeError("hvdrun failed (%d):\n%s" % (proc.returncode, proc.stderr[-3000:]))
    return stamps(proc.stdout)


def hvd_failure(hvdrun, cooldown):
    extra = ["--blacklist-cooldown-range", "1", "2"] if cooldown else []
    if cooldown:
        tmp = tempfile.mkdtemp(prefix="hvd-elastic-bench-")
        script = os.path.join(tmp, "discover.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\necho localhost:1\necho 127.0.0.1:1\n")
        os.chmod(script, 0o755)
        hosts = ["--host-discovery-script", script, "--host-discovery-interval", "0.1"]
    else:
        hosts = ["--elastic", "-H", "localhost:1,127.0.0.1:1"]
    ev = run_hvd(hvdrun, ["-np", "2", "--min-np", "1", "--max-np", "2"] + hosts + extra,
                 ["--fail-at", "5", "--steps", "400" if cooldown else "30"])
    dead = first(ev, "failing", worker=1)
    detected = first(ev, "error", worker=0, after=dead)
    resumed = first(ev, "step", worker=0, size=1, after=dead)
    result = {"detect": detected - dead, "resume": resumed - detected, "death->resume": resumed - dead}
    if cooldown:
        result["back"] = first(ev, "step", worker=0, size=2, after=resumed) - dead
    return result


def hvd_scale_up(hvdrun):
    tmp = tempfile.mkdtemp(prefix="hvd-elastic-bench-")
    trigger, seen = os.path.join(tmp, "trigger"), os.path.join(tmp, "seen")
    script = os.path.join(tmp, "discover.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho localhost:1\nif [ -e %s ]; then echo 127.0.0.1:1; "
                "[ -e %s ] || date +%%s.%%N > %s; fi\n" % (trigger, seen, seen))
    os.chmod(script, 0o755)
    ev = run_hvd(hvdrun, ["-np", "1", "--min-np", "1", "--max-np", "2", "--host-discovery-script",
                          script, "--host-discovery-interval", "0.1"],
                 ["--trigger", trigger, "--trigger-at", "5", "--steps", "300"])
    with open(seen) as f:
        listed = float(f.read())
    joined = first(ev, "step", worker=1, size=2)
    last_alone = max(t for e, t, w, n in ev if e == "step" and w == 0 and n == 1 and t < joined)
    together = first(ev, "step", worker=0, size=2)
    return {"join": joined - listed, "pause": together - last_alone}


def torchrun(monitor_interval):
    cmd = [PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "--max_restarts", "1", "--redirects", "9:1", "--tee", "9:1"]
    if monitor_interval is not None:
        cmd += ["--monitor_interval", str(monitor_interval)]
    proc = subprocess.run(cmd + [os.path.join(HERE, "torchrun_elastic_restart.py")],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    text = proc.stdout + proc.stderr
    failing = float(re.search(r"attempt=0 rank=1 failing_at=([\d.]+)", text).group(1))
    ready = [float(m.group(1)) for m in
             re.finditer(r"attempt=1 rank=\d process_start=[\d.]+ ready=([\d.]+)", text)]
    if len(ready) != 2:
        raise RuntimeError("torchrun did not restart both ranks:\n" + text[-3000:])
    return {"restart": max(ready) - failing}


def median_of(runs, key):
    return statistics.median(r[key] for r in runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hvdrun", default=os.path.join(HERE, "..", "build", "cmd", "hvdrun"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--hosts", action="store_true",
                        help="across the namespace cluster instead (root; bench/elastic_hosts.py)")
    parser.add_argument("--heartbeat", type=float, default=5.0,
                        help="--hosts: HVD_HEARTBEAT_TIMEOUT_SECONDS of the hvd jobs")
    parser.add_argument("--no-torchrun", action="store_true", help="--hosts: hvd only")
    args = parser.parse_args()
    if args.hosts:
        return hosts_main(args)
    failure, back, scale, tr_fast, tr_default = [], [], [], [], []
    for _ in range(args.reps):  # interleaved, so load drifts hit every column alike
        failure.append(hvd_failure(args.hvdrun, cooldown=False))
        scale.append(hvd_scale_up(args.hvdrun))
        back.append(hvd_failure(args.hvdrun, cooldown=True))
        tr_fast.append(torchrun(0.1))
        tr_default.append(torchrun(None))
    rows = [
        ("hvd: death -> HorovodInternalError in the survivor (detect)", median_of(failure, "detect")),
        ("hvd: HorovodInternalError -> first step at the new size (resume)", median_of(failure, "resume")),
        ("hvd: death -> survivor's first step at the new size", median_of(failure, "death->resume")),
        ("hvd: discovery lists a new host -> its worker's first step (join)", median_of(scale, "join")),
        ("hvd: the running worker's pause for the join", median_of(scale, "pause")),
        ("hvd: death -> full size again (cooldown 1-2 s)", median_of(back, "back")),
        ("torchrun: failure -> restarted group's first allreduce (monitor 0.1 s)", median_of(tr_fast, "restart")),
        ("torchrun: failure -> restarted group's first allreduce (monitor 5 s)", median_of(tr_default, "restart")),
    ]
    print("elastic recovery, median of %d runs (%s, load %.1f)" %
          (args.reps, time.strftime("%Y-%m-%d"), os.getloadavg()[0]))
    for name, value in rows:
        print("  %-76s %8.3f s" % (name, value))
    resume = median_of(failure, "death->resume")
    print("ratios: torchrun (monitor 0.1 s) restart / hvd survivors resuming: %.1fx; "
          "torchrun restart / hvd new host joining: %.1fx" %
          (median_of(tr_fast, "restart") / resume,
           median_of(tr_fast, "restart") / median_of(scale, "join")))
    return 0


def hosts_main(args):
    import elastic_hosts
    elastic_hosts.cluster("up")
    runs, torchrun_cuts = [], []
    try:
        for _ in range(args.reps):
            runs.append(elastic_hosts.hvd_rep(os.path.abspath(args.hvdrun), args.heartbeat))
            print("  hvd rep: " + ", ".join("%s %.3f" % kv for kv in runs[-1].items()),
                  flush=True)
            if not args.no_torchrun:
                torchrun_cuts.append(elastic_hosts.torchrun_rep())
                print("  torchrun rep: cut -> restarted %s" % torchrun_cuts[-1], flush=True)
    finally:
        elastic_hosts.cluster("down")
    h = args.heartbeat
    rows = [
        ("hvd: discovery lists a new host -> first step at 4", "new host", 3.0),
        ("hvd: discovery drops a healthy host (drain) -> first step at 2", "drain", 1.0),
        ("hvd: discovery lists the drained host again -> first step at 4", "re-add", 3.0),
        ("hvd: link cut (heartbeat %g s) -> survivors' first step at 2" % h, "cut", h + 1.0),
        ("hvd: the cut host listed again after its cooldown -> first step at 4", "return", 3.0),
        ("hvd: a worker SIGKILLed -> survivors' first step at 2", "exit", 1.0),
    ]
    print("elastic recovery across 2 SSH hosts x 2 workers, median of %d runs (%s, load %.1f)" %
          (args.reps, time.strftime("%Y-%m-%d"), os.getloadavg()[0]))
    for name, key, target in rows:
        print("  %-72s %7.3f s  (target <= %g s)" % (name, median_of(runs, key), target))
    done = [t for t in torchrun_cuts if t is not None]
    if torchrun_cuts:
        print("  %-72s %s" % ("torchrun: link cut -> restarted group's first allreduce "
                              "(gloo timeout 5 s)", "%7.3f s" % statistics.median(done)
                              if done else "never (120 s)") +
              ("" if len(done) == len(torchrun_cuts) else
               "  (%d of %d runs recovered)" % (len(done), len(torchrun_cuts))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
