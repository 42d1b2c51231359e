"""hvdrun's output forwarding: prefixes, line integrity under load, odd line ends, files."""
import re

from hvdrun_harness import python_rank, run

HEAVY = r"""
import os, sys
rank = int(os.environ["HVD_RANK"])
out = sys.stdout.buffer
for i in range(20000):
    width = 70000 if i % 2000 == 7 else 150   # some lines longer than a pipe buffer
    body = ("%d:%d:" % (rank, i)).encode() + bytes([97 + (i + rank) % 26]) * width
    out.write(body + b"\n")
    if i % 3 == 0:
        out.flush()
out.flush()
"""


def expected_body(rank, i):
    width = 70000 if i % 2000 == 7 else 150
    return ("%d:%d:" % (rank, i)).encode() + bytes([97 + (i + rank) % 26]) * width


def test_heavy_interleaved_output_keeps_every_line_intact():
    result = run(["-np", "4", "-H", "localhost:4"] + python_rank(HEAVY), timeout=240)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    seen = {r: 0 for r in range(4)}
    for line in result.stdout.split(b"\n")[:-1]:
        m = re.match(rb"\[(\d)\]<stdout>:", line)
        assert m, line[:200]
        rank = int(m.group(1))
        body = line[m.end():]
        assert body == expected_body(rank, seen[rank]), (rank, seen[rank], body[:100])
        seen[rank] += 1
    assert seen == {r: 20000 for r in range(4)}
    assert result.stdout.endswith(b"\n")


def test_partial_last_line_is_completed():
    result = run(["-np", "2", "sh", "-c", "printf 'line\\npartial'"])
    assert result.returncode == 0
    lines = sorted(result.stdout.decode().splitlines(keepends=True))
    assert lines == ["[0]<stdout>:line\n", "[0]<stdout>:partial\n", "[1]<stdout>:line\n",
                     "[1]<stdout>:partial\n"]


def test_carriage_return_ends_a_line():
    result = run(["-np", "1", "sh", "-c", "printf '10%%\\r50%%\\r100%%\\n'"])
    assert result.returncode == 0
    assert result.stdout == b"[0]<stdout>:10%\r[0]<stdout>:50%\r[0]<stdout>:100%\n"


def test_utf8_passes_through_byte_exact():
    text = "héllo wörld € 日本語 😀"
    script = ("import sys\nb = %r.encode()\nfor i in range(len(b)):\n"
              "    sys.stdout.buffer.write(b[i:i+1]); sys.stdout.buffer.flush()\n"
              "sys.stdout.buffer.write(b'\\n')\n" % text)
    result = run(["-np", "1"] + python_rank(script))
    assert result.returncode == 0
    assert result.stdout == ("[0]<stdout>:" + text + "\n").encode()


def test_stderr_is_prefixed_on_stderr():
    result = run(["-np", "2", "sh", "-c", "echo oops >&2"])
    assert result.returncode == 0
    assert sorted(result.stderr.decode().splitlines()) == ["[0]<stderr>:oops", "[1]<stderr>:oops"]
    assert result.stdout == b""


def test_output_filename_writes_raw_per_rank_files(tmp_path):
    out_dir = tmp_path / "logs"
    result = run(["-np", "11", "-H", "localhost:11", "--output-filename", str(out_dir),
                  "sh", "-c", "echo out$HVD_RANK; printf 'err\\r%s' $HVD_RANK >&2"])
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(p.name for p in out_dir.iterdir()) == ["rank.%02d" % r for r in range(11)]
    for r in range(11):
        assert (out_dir / ("rank.%02d" % r) / "stdout").read_bytes() == b"out%d\n" % r
        assert (out_dir / ("rank.%02d" % r) / "stderr").read_bytes() == b"err\r%d" % r
    # Still echoed to the console.
    assert "[10]<stdout>:out10" in result.stdout.decode()


def test_prefix_timestamp_uses_asctime_form():
    result = run(["--prefix-output-with-timestamp", "-np", "1", "echo", "hi"])
    assert result.returncode == 0
    line = result.stdout.decode()
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\[0\]<stdout>:hi\n", line), line
