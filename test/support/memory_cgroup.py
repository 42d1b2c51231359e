"""A memory cgroup for tests that need the kernel's OOM killer to act (Python twin of
memory_cgroup.h). Test folders put test/support on sys.path in their conftest.py."""
import contextlib
import os
import time
import uuid


@contextlib.contextmanager
def memory_cgroup(limit_bytes):
    """A memory cgroup of its own below this process's, limited to `limit_bytes` with no swap,
    so the kernel's OOM killer acts on the process that joins it (by writing its pid into the
    cgroup.procs path this yields): a real OOM kill. cgroup v1 (the memory hierarchy) or v2.
    Skips the test where this machine cannot (not root, no memory controller); removed after."""
    import pytest
    if os.geteuid() != 0:
        pytest.skip("needs root (a memory cgroup of its own)")
    root = where = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if "memory" in controllers.split(","):
                root, where = "/sys/fs/cgroup/memory", path
                break
            if controllers == "" and root is None:
                root, where = "/sys/fs/cgroup", path
    if root is None:
        pytest.skip("no memory cgroup in /proc/self/cgroup")
    directory = os.path.join(root + where.rstrip("/"), "hvd-test-oom-%d-%s" % (os.getpid(),
                                                                             uuid.uuid4().hex[:8]))
    try:
        os.mkdir(directory)
    except OSError as error:
        pytest.skip("cannot create %s: %s" % (directory, error))
    try:
        def write(name, value):
            with open(os.path.join(directory, name), "w") as f:
                f.write(value)
        if os.path.exists(os.path.join(directory, "memory.limit_in_bytes")):  # v1
            write("memory.limit_in_bytes", str(limit_bytes))
            if os.path.exists(os.path.join(directory, "memory.memsw.limit_in_bytes")):
                write("memory.memsw.limit_in_bytes", str(limit_bytes))
        elif os.path.exists(os.path.join(directory, "memory.max")):  # v2
            write("memory.max", str(limit_bytes))
            if os.path.exists(os.path.join(directory, "memory.swap.max")):
                write("memory.swap.max", "0")
        else:
            pytest.skip("%s has no memory controller" % directory)
        yield os.path.join(directory, "cgroup.procs")
    finally:
        # Its processes leave it as they are reaped: bounded retries for the last ones.
        deadline = time.monotonic() + 5
        while True:
            try:
                os.rmdir(directory)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
