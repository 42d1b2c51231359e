"""hvdrun runs local jobs: rank counts, per-rank environment, the job key, stdin."""
import json
import os
import re
import signal
import socket
import subprocess

import pytest

from hvdrun_harness import (HVDRUN, PYTHON, assert_no_survivors, kill_leftovers, physical_cores,
                            python_rank, require_hvdrun, run, start, unique_marker,
                            wait_for)

DUMP_ENV = r"""
import json, os, sys
d = sys.argv[-1]
rank = os.environ["HVD_RANK"]
fd = int(os.environ["HVD_SECRET_FD"])
key = os.pread(fd, 64, 0)
env = dict(os.environ)
env["_key_hex"] = key.hex()
with open(os.path.join(d, "env.%s.json" % rank), "w") as f:
    json.dump(env, f)
"""


@pytest.mark.parametrize("np", [1, 2, 4])
def test_runs_np_ranks_and_each_sees_its_rank(np):
    result = run(["-np", str(np), "-H", "localhost:%d" % np, "sh", "-c", "echo rank=$HVD_RANK"])
    assert result.returncode == 0, result.stderr.decode()
    lines = sorted(result.stdout.decode().splitlines())
    assert lines == sorted("[%d]<stdout>:rank=%d" % (r, r) for r in range(np))


def test_echo_rank_prints_four_prefixed_lines():
    result = run(["-np", "4", "-H", "localhost:4", "sh", "-c", "echo $HVD_RANK"])
    assert result.returncode == 0
    assert sorted(result.stdout.decode().splitlines()) == [
        "[0]<stdout>:0", "[1]<stdout>:1", "[2]<stdout>:2", "[3]<stdout>:3"]


def test_ranks_given_as_different_local_hosts_are_hosts_of_their_own_to_nccl_too():
    # Two names of this machine: each rank is local rank 0 of its own host, and NCCL is told
    # the same (NCCL_HOSTID), so two NCCL ranks may share one GPU; a user's NCCL_HOSTID wins.
    script = "echo $HVD_LOCAL_RANK/$HVD_LOCAL_SIZE $HVD_HOSTNAME $NCCL_HOSTID $LOCAL_RANK"
    result = run(["-np", "2", "-H", "localhost:1,127.0.0.1:1", "sh", "-c", script])
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(result.stdout.decode().splitlines()) == [
        "[0]<stdout>:0/1 localhost localhost 0", "[1]<stdout>:0/1 127.0.0.1 127.0.0.1 0"]
    result = run(["-np", "2", "sh", "-c", "echo $NCCL_HOSTID"],
                 env=dict(os.environ, NCCL_HOSTID="mine"))
    assert sorted(result.stdout.decode().splitlines()) == ["[0]<stdout>:mine", "[1]<stdout>:mine"]
    # hvdrun run by a rank of another job (as the GPU tests launch their NCCL jobs) inherits
    # that rank's NCCL_HOSTID: not the user's, so the inner ranks still get their own hosts'
    inner = "%s -np 2 -H localhost:1,127.0.0.1:1 sh -c 'echo inner $NCCL_HOSTID'" % HVDRUN
    result = run(["-np", "1", "sh", "-c", inner])
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(result.stdout.decode().splitlines()) == [
        "[0]<stdout>:[0]<stdout>:inner localhost", "[0]<stdout>:[1]<stdout>:inner 127.0.0.1"], \
        result.stdout.decode()


def test_every_rank_gets_the_documented_environment(tmp_path):
    result = run(["-np", "4", "-H", "localhost:4"] + python_rank(DUMP_ENV) + [str(tmp_path)])
    assert result.returncode == 0, result.stderr.decode()
    envs = [json.loads((tmp_path / ("env.%d.json" % r)).read_text()) for r in range(4)]
    ports = set()
    for rank, env in enumerate(envs):
        for prefix in ("HVD_", "HOROVOD_"):
            assert env[prefix + "RANK"] == str(rank)
            assert env[prefix + "SIZE"] == "4"
            assert env[prefix + "LOCAL_RANK"] == str(rank)
            assert env[prefix + "LOCAL_SIZE"] == "4"
            assert env[prefix + "CROSS_RANK"] == "0"
            assert env[prefix + "CROSS_SIZE"] == "1"
            assert env[prefix + "HOSTNAME"] == "localhost"
            assert env[prefix + "CONTROLLER"] == "gloo"
            assert env[prefix + "CPU_OPERATIONS"] == "auto"
        assert env["RANK"] == str(rank)
        assert env["WORLD_SIZE"] == "4"
        assert env["LOCAL_RANK"] == str(rank)
        assert env["LOCAL_WORLD_SIZE"] == "4"
        assert env["MASTER_ADDR"] == "127.0.0.1"
        assert 0 < int(env["MASTER_PORT"]) < 65536
        assert env["HVD_RENDEZVOUS_ADDR"] == "127.0.0.1"
        assert env["HOROVOD_GLOO_RENDEZVOUS_ADDR"] == "127.0.0.1"
        assert env["HVD_RENDEZVOUS_PORT"] == env["HOROVOD_GLOO_RENDEZVOUS_PORT"]
        assert re.fullmatch(r"[0-9a-f]{8,}", env["HVD_JOB_ID"])
        assert env["PYTHONUNBUFFERED"] == "1"
        assert re.fullmatch(r"\d+", env["HVD_SECRET_FD"])
        assert len(bytes.fromhex(env["_key_hex"])) == 32, "the key fd holds 32 bytes"
        assert env.get("PATH") == os.environ.get("PATH"), "hvdrun's environment is inherited"
        ports.add((env["HVD_RENDEZVOUS_PORT"], env["MASTER_PORT"], env["HVD_JOB_ID"]))
    assert len(ports) == 1, "job-wide values are the same on every rank"
    assert len({env["_key_hex"] for env in envs}) == 1
    # The key is in no variable's value.
    for env in envs:
        key = env.pop("_key_hex")
        assert not any(key in value for value in env.values())


def test_runtime_library_is_set_when_built_and_user_value_wins(tmp_path):
    lib = os.path.join(os.path.dirname(os.path.dirname(os.environ["HVDRUN"])), "runtime",
                       "libhvd.so")
    script = "import os; print(os.environ.get('HVD_RUNTIME_LIBRARY', '<unset>'))"
    result = run(["-np", "1"] + python_rank(script))
    assert result.returncode == 0
    expected = os.path.realpath(lib) if os.path.exists(lib) else "<unset>"
    assert result.stdout.decode() == "[0]<stdout>:%s\n" % expected
    env = dict(os.environ, HVD_RUNTIME_LIBRARY="/my/own/libhvd.so")
    result = run(["-np", "1"] + python_rank(script), env=env)
    assert result.stdout.decode() == "[0]<stdout>:/my/own/libhvd.so\n"


def test_job_key_is_not_in_any_argv_or_environment(tmp_path):
    marker = unique_marker()
    script = r"""
import os, sys, time
d = sys.argv[-1]
key = os.pread(int(os.environ["HVD_SECRET_FD"]), 32, 0)
# Every rank writes its own temporary file: both ranks hold the same key, and a
# shared "key.tmp" would let one rank's rename pull the file from under the other.
tmp = os.path.join(d, "key.%d.tmp" % os.getpid())
open(tmp, "w").write(key.hex())
os.rename(tmp, os.path.join(d, "key"))
deadline = time.monotonic() + 30
while not os.path.exists(os.path.join(d, "go")) and time.monotonic() < deadline:
    time.sleep(0.02)
"""
    proc = start(["-np", "2"] + python_rank(script, marker) + [str(tmp_path)])
    try:
        wait_for(lambda: (tmp_path / "key").exists(), 30, "rank 0 to read the key")
        key = bytes.fromhex((tmp_path / "key").read_text())
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            for name in ("cmdline", "environ"):
                try:
                    data = open("/proc/%s/%s" % (entry, name), "rb").read()
                except OSError:
                    continue
                assert key not in data and key.hex().encode() not in data, (entry, name)
        (tmp_path / "go").write_text("")
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()
        assert key.hex().encode() not in out + err
    finally:
        proc.kill()
        proc.wait(timeout=30)
        kill_leftovers(marker)
    assert_no_survivors(marker)


def test_rank_inherits_only_stdio_and_the_key_descriptor():
    script = ("import os\n"
              "fds = sorted(int(f) for f in os.listdir('/proc/self/fd'))\n"
              "fds = [f for f in fds if os.path.exists('/proc/self/fd/%d' % f)]\n"
              "print(fds == [0, 1, 2, int(os.environ['HVD_SECRET_FD'])], fds)")
    extra = os.open("/dev/null", os.O_RDONLY)  # not close-on-exec, and not for the ranks
    try:
        os.set_inheritable(extra, True)
        result = subprocess.run([os.environ["HVDRUN"], "-np", "2"] + python_rank(script),
                                capture_output=True, timeout=60, close_fds=False)
    finally:
        os.close(extra)
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(l.split(" ")[0] for l in result.stdout.decode().splitlines()) == [
        "[0]<stdout>:True", "[1]<stdout>:True"], result.stdout.decode()


def test_stdin_goes_to_rank_0_only():
    result = run(["-np", "2", "sh", "-c", "cat; echo done$HVD_RANK"], input=b"hello\nworld\n")
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert [l for l in lines if l.startswith("[0]")] == [
        "[0]<stdout>:hello", "[0]<stdout>:world", "[0]<stdout>:done0"]
    assert [l for l in lines if l.startswith("[1]")] == ["[1]<stdout>:done1"]


def test_large_stdin_reaches_rank_0_intact():
    data = bytes(range(256)) * 8192  # 2 MiB, every byte value
    script = ("import hashlib, sys\n"
              "print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())")
    result = run(["-np", "2"] + python_rank(script), input=data)
    assert result.returncode == 0, result.stderr.decode()
    import hashlib
    empty = hashlib.sha256(b"").hexdigest()
    assert sorted(result.stdout.decode().splitlines()) == [
        "[0]<stdout>:" + hashlib.sha256(data).hexdigest(), "[1]<stdout>:" + empty]


def test_rank_0_not_reading_stdin_does_not_block_the_job():
    result = run(["-np", "1", "true"], input=b"x" * (4 << 20))
    assert result.returncode == 0


def test_verbose_prints_the_launch_steps():
    result = run(["--verbose", "-np", "2", "-H", "localhost:2", "true"])
    assert result.returncode == 0
    err = result.stderr.decode()
    assert "hosts from -H" in err
    assert "rendezvous server listening on 127.0.0.1:" in err
    assert "started rank 0 on localhost" in err and "started rank 1 on localhost" in err


def test_options_after_the_command_are_said_to_be_the_commands():
    # horovodrun's classic slip: hvdrun reads its options before the command only
    result = run(["sh", "-c", "true", "-np", "2"])
    assert result.returncode == 64
    assert ("-np is required when no hosts are given (no -H, no --hostfile, and no Slurm or LSF "
            "allocation in the environment); -np after the command is the command's own "
            "argument: hvdrun reads its options before the command (hvdrun -np 2 sh ...)"
            ) in result.stderr.decode(), result.stderr.decode()


def test_check_without_hosts_checks_this_machine():
    # docs/cli.md: --check needs no command; without -H/--hostfile/-np it checks localhost
    # (it answered "-np is required when no hosts are given", a launch's usage error).
    result = run(["--check"])
    out = result.stdout.decode()
    assert result.returncode == 0, out + result.stderr.decode()
    assert re.search(r"^localhost\s+local\s+hvd-agent .* OK$", out, re.M), out
    assert "all 1 hosts OK" in out


def test_np_smaller_than_slots_starts_np_ranks():
    result = run(["-np", "2", "-H", "localhost:4", "sh", "-c", "echo $HVD_SIZE"])
    assert result.returncode == 0
    assert sorted(result.stdout.decode().splitlines()) == ["[0]<stdout>:2", "[1]<stdout>:2"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_plain_torch_distributed_script_runs_from_torchruns_variables():
    # A DDP script with no hvd in it: hvdrun gives it RANK, WORLD_SIZE, LOCAL_RANK,
    # LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT, as torchrun would
    worker = os.path.join(os.path.dirname(__file__), "ddp_worker.py")
    result = run(["-np", "3", PYTHON, worker], timeout=120)
    out = result.stdout.decode()
    assert result.returncode == 0, out + result.stderr.decode()
    assert sorted(out.splitlines()) == [
        "[%d]<stdout>:DDP OK rank %d of 3 local %d/3 group 0/1 master 127.0.0.1 grad 2.0"
        % (r, r, r)
        for r in range(3)], out
    # An exported MASTER_PORT (torchrun's --master-port, a port the firewall opens) wins over
    # hvdrun's choice, and the script runs on it
    env = dict(os.environ, MASTER_PORT=str(free_port()))
    env.pop("MASTER_ADDR", None)
    given = run(["-np", "2", "sh", "-c", "echo $MASTER_ADDR $MASTER_PORT"], env=env)
    assert sorted(given.stdout.decode().splitlines()) == [
        "[%d]<stdout>:127.0.0.1 %s" % (r, env["MASTER_PORT"]) for r in range(2)], given.stdout
    ddp = run(["-np", "2", PYTHON, worker], env=env, timeout=120)
    assert ddp.returncode == 0, ddp.stdout.decode() + ddp.stderr.decode()
    # and --dry-run shows it
    dry = run(["--dry-run", "-np", "2", "true"], env=env)
    assert dry.stdout.decode().count("    MASTER_PORT=%s\n" % env["MASTER_PORT"]) == 2, dry.stdout
    # An exported port another process holds: rank 0's store cannot listen, and the failure says
    # whose port it was and the way out
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        env["MASTER_PORT"] = str(held.getsockname()[1])
        taken = run(["--timeout", "90", "-np", "2", PYTHON, worker], env=env, timeout=120)
    err = taken.stderr.decode()
    assert taken.returncode == 1, err
    assert "rank 0 on localhost failed first: exit code 1: RuntimeError: The server socket has " \
        "failed to listen" in err, err
    assert ("hint: rank 0: MASTER_PORT %s, exported in hvdrun's environment and given to every "
            "rank as it is, is in use on localhost (Address already in use)" % env["MASTER_PORT"]
            ) in err, err


def test_each_rank_gets_its_share_of_the_cpus_as_omp_threads():
    # --worker-threads share (the default): OMP_NUM_THREADS = this host's cores / its ranks, which
    # torch's intra-op pool takes (its own default is every core, in every rank)
    cpus = physical_cores()
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS",
                                                             "HVD_WORKER_THREADS")}
    show = "import os, torch; print(os.environ.get('OMP_NUM_THREADS'), torch.get_num_threads())"
    one = run(["-np", "1", PYTHON, "-c", show], env=env, timeout=120)
    assert one.returncode == 0, one.stderr.decode()
    assert one.stdout.decode() == "[0]<stdout>:%d %d\n" % (cpus, cpus)
    two = run(["-np", "2", "sh", "-c", "echo $OMP_NUM_THREADS"], env=env)
    assert sorted(two.stdout.decode().split()) == sorted(
        "[%d]<stdout>:%d" % (r, max(1, cpus // 2)) for r in range(2)), two.stdout.decode()
    # Host names that are all this machine share its cores too
    hosts = run(["-np", "2", "-H", "localhost:1,127.0.0.1:1", "sh", "-c", "echo $OMP_NUM_THREADS"],
                env=env)
    assert sorted(hosts.stdout.decode().split()) == sorted(
        "[%d]<stdout>:%d" % (r, max(1, cpus // 2)) for r in range(2)), hosts.stdout.decode()
    # The user's own value wins; --worker-threads system (or the variable) sets nothing
    own = run(["-np", "2", "sh", "-c", "echo $OMP_NUM_THREADS"],
              env=dict(env, OMP_NUM_THREADS="5"))
    assert sorted(own.stdout.decode().split()) == ["[0]<stdout>:5", "[1]<stdout>:5"]
    for args, extra in ((["--worker-threads", "system"], {}), ([], {"HVD_WORKER_THREADS": "system"})):
        unset = run(args + ["-np", "1", "sh", "-c", "echo \"[${OMP_NUM_THREADS-unset}]\""],
                    env=dict(env, **extra))
        assert unset.stdout.decode() == "[0]<stdout>:[unset]\n", (args, extra)


# Started with SIGCHLD ignored (some daemons and shells leave it so; it survives exec): hvdrun
# and its guardians waited forever for children the kernel had reaped (until 2026-12-01).
def test_a_sigchld_ignored_by_the_parent_does_not_hang_the_job():
    require_hvdrun()
    result = subprocess.run(
        [HVDRUN, "-np", "2", "sh", "-c", "echo rank $HVD_RANK"], capture_output=True,
        timeout=60, preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(result.stdout.decode().splitlines()) == ["[0]<stdout>:rank 0",
                                                           "[1]<stdout>:rank 1"]


# Started with stdin, or stderr, closed (a daemon, `hvdrun ... <&-`): hvdrun's first descriptors
# took those numbers. The signalfd on 0 was read by rank 0's stdin pump and hvdrun never ended;
# the job key's memfd on 2 was replaced by the rank's stderr, so no rank could connect (until
# 2026-12-01). Now they are /dev/null, and the rank's HVD_SECRET_FD holds the 32-byte key.
@pytest.mark.parametrize("closed", [[0], [2], [0, 1, 2]], ids=["stdin", "stderr", "all"])
def test_closed_standard_descriptors_neither_hang_nor_hide_the_key(tmp_path, closed):
    require_hvdrun()
    size = tmp_path / "key_size"
    script = "stat -L -c %%s /proc/self/fd/$HVD_SECRET_FD > %s" % size

    def close_them():
        for fd in closed:
            os.close(fd)

    result = subprocess.run([HVDRUN, "-np", "1", "sh", "-c", script], capture_output=True,
                            timeout=60, preexec_fn=close_them)
    assert result.returncode == 0, result.stderr.decode()
    assert size.read_text().strip() == "32"
