"""Parsing and formatting shared by the allreduce comparison scripts (compare_allreduce.sh,
compare_allreduce_hosts.sh): hvd-bench output under hvdrun, and the peers' RESULT lines."""
import re
import statistics

SIZES = [4096, 65536, 1048576, 16777216, 67108864]
MANY = ["many-fused", "many-single"]


def peer(path):
    """A peer's RESULT lines: <bytes> <us> (torch_gloo_bench.py, mpi_allreduce.c; <us> is
    "unsupported" where the peer lacks the op: the value is then None), many-<kind> <k> <us>
    (--many) and <op> <mode> <bytes> <us> (mpi_collective.c)."""
    res = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return res
    for line in lines:
        f = re.sub(r"^\[[\d,]+\]<std(out|err)>:", "", line).split()
        if f[:1] != ["RESULT"] or len(f) not in (3, 4, 5):
            continue
        value = None if f[-1] == "unsupported" else float(f[-1])
        if len(f) == 4:
            res[f[1]] = value
        else:
            res[int(f[-2])] = value
    return res


def _lines(path):
    # hvdrun prefixes forwarded output with "[rank]<stdout>:".
    try:
        return [re.sub(r"^\[\d+\]<std(out|err)>:", "", l) for l in open(path)]
    except OSError:
        return []


def hvd(path, many_path=None):
    """hvd-bench's size table (time = median round, max over ranks) and --many lines."""
    res = {}
    for line in _lines(path):
        f = line.split()
        if len(f) >= 6 and f[0].isdigit():
            res[int(f[0])] = float(f[2])
    for line in _lines(many_path) if many_path else []:
        m = re.match(r"(async|one by one).*?\)\s+([\d.]+)", line)
        if m:
            res["many-fused" if m.group(1) == "async" else "many-single"] = float(m.group(2))
    return res


def median_of(results):
    """Per key, the median of the runs' values (dicts of hvd()/peer() from repeated runs);
    a key missing from some runs takes the median of the others."""
    keys = {k for r in results for k in r}
    return {k: statistics.median([r[k] for r in results if k in r]) for k in keys}


def spread(results, k):
    """'lo-hi' of key k over repeated runs, formatted, or '' with fewer than two values."""
    vals = [r[k] for r in results if k in r]
    if len(vals) < 2:
        return ""
    return f"{fmt_us(min(vals))}-{fmt_us(max(vals))}"


def print_ranges(heads, rows):
    """The 'Ranges over the runs' table: column `heads`, then for each (keys, runs_per_side, k)
    of `rows` the key cells and each side's spread of k ('-' with fewer than two values)."""
    print("\nRanges over the runs:\n")
    print("| " + " | ".join(heads) + " |")
    print("|" + "---|" * len(heads))
    for keys, sides, k in rows:
        print("| " + " | ".join(str(c) for c in keys) + " | " +
              " | ".join(spread(runs, k) or "-" for runs in sides) + " |")


def fmt_us(v):
    if v is None:
        return "-"
    return f"{v:.1f} µs" if v < 1000 else f"{v / 1000:.2f} ms"


def label(k):
    if isinstance(k, int):
        return f"{k >> 20} MiB" if k >= 1 << 20 else f"{k >> 10} KiB"
    return "100×16 KiB " + ("fused" if k == "many-fused" else "one by one")


def ratio(a, b):
    """a / b, formatted; > 1 means b (hvd) is faster."""
    return f"{a / b:.2f}" if a and b else "-"
