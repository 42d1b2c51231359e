"""hvdrun --worker-malloc: the glibc allocator settings the workers start with
(launcher/worker/worker_malloc.h), and that glibc in the worker applies them."""
import os

from hvdrun_harness import PYTHON, run

# Prints, per rank: whether an 8 MiB block came from its own mapping (glibc's default for
# 128 KiB and more) or from the heap (the tuned threshold), and the two variables.
PROBE = r"""
import ctypes, os
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
before = libc.mallinfo2().hblks
block = libc.malloc(8 << 20)
mapped = libc.mallinfo2().hblks - before
libc.free(block)
print("mapped=%d mmap=%s trim=%s" % (mapped, os.environ.get("MALLOC_MMAP_THRESHOLD_"),
                                     os.environ.get("MALLOC_TRIM_THRESHOLD_")))
"""


def probe(args, env=None):
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("MALLOC_") and k not in ("GLIBC_TUNABLES", "HVD_WORKER_MALLOC")}
    result = run(["-np", "2", "-H", "localhost:2"] + args + [PYTHON, "-c", PROBE],
                 env=dict(base, **(env or {})))
    assert result.returncode == 0, result.stderr.decode()
    lines = sorted(line.partition("<stdout>:")[2] for line in result.stdout.decode().splitlines()
                   if "<stdout>:" in line)
    assert len(lines) == 2, result.stdout.decode()
    assert lines[0] == lines[1], lines  # both ranks alike
    return lines[0]


def test_default_keeps_large_blocks_in_the_heap():
    assert probe([]) == "mapped=0 mmap=33554432 trim=1073741824"
    assert probe(["--worker-malloc", "tuned"]) == "mapped=0 mmap=33554432 trim=1073741824"


def test_system_leaves_glibc_defaults_and_the_flag_wins_over_the_variable():
    assert probe(["--worker-malloc", "system"]) == "mapped=1 mmap=None trim=None"
    assert probe([], env={"HVD_WORKER_MALLOC": "system"}) == "mapped=1 mmap=None trim=None"
    tuned = probe(["--worker-malloc", "tuned"], env={"HVD_WORKER_MALLOC": "system"})
    assert tuned == "mapped=0 mmap=33554432 trim=1073741824"


def test_the_config_file_sets_it(tmp_path):
    config = tmp_path / "hvd.yaml"
    config.write_text("library_options:\n  worker_malloc: system\n")
    assert probe(["--config-file", str(config)]) == "mapped=1 mmap=None trim=None"


def test_a_users_own_allocator_settings_are_left_alone():
    # One threshold of the user's: hvdrun adds nothing (setting one already fixes glibc's).
    assert probe([], env={"MALLOC_TRIM_THRESHOLD_": "4096"}) == "mapped=1 mmap=None trim=4096"
    tunables = "glibc.malloc.mmap_threshold=65536"
    assert probe([], env={"GLIBC_TUNABLES": tunables}) == "mapped=1 mmap=None trim=None"
    # Tunables of another kind do not count as allocator settings.
    other = probe([], env={"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=1024"})
    assert other == "mapped=0 mmap=33554432 trim=1073741824"


def test_bad_values_are_refused_naming_the_flag_or_the_variable(tmp_path):
    result = run(["-np", "2", "--worker-malloc", "jemalloc", "true"])
    assert result.returncode == 64, result.stderr.decode()
    assert "--worker-malloc" in result.stderr.decode() and "jemalloc" in result.stderr.decode()
    result = run(["-np", "2", "true"], env=dict(os.environ, HVD_WORKER_MALLOC="fast"))
    assert result.returncode == 64, result.stderr.decode()
    assert "HVD_WORKER_MALLOC" in result.stderr.decode() and "fast" in result.stderr.decode()
    config = tmp_path / "hvd.yaml"
    config.write_text("library_options:\n  worker_malloc: big\n")
    result = run(["-np", "2", "--config-file", str(config), "true"])
    assert result.returncode == 64, result.stderr.decode()
    err = result.stderr.decode()
    assert "library_options.worker_malloc" in err and "big" in err and str(config) in err
