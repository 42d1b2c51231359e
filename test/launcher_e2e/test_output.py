"""hvdrun's output forwarding: prefixes, line integrity under load, odd line ends, files."""
import os
import re
import subprocess

import pytest

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


def test_output_files_on_a_full_disk_end_early_say_so_and_lose_nothing_on_the_console(tmp_path):
    # A real full file system: a 64 KiB tmpfs (root only).
    if os.geteuid() != 0:
        pytest.skip("needs root (mounts a small tmpfs)")
    disk = tmp_path / "small"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs: %s" % mounted.stderr.decode().strip())
    try:
        out_dir = disk / "logs"
        result = run(["-np", "2", "--output-filename", str(out_dir), "sh", "-c",
                      'for i in $(seq 1 3000); do echo "rank $HVD_RANK line $i ........"; done'])
        files = {r: (out_dir / ("rank.%d" % r) / "stdout").read_bytes() for r in range(2)}
    finally:
        subprocess.run(["umount", str(disk)], check=True)
    err = result.stderr.decode()
    assert result.returncode == 0, err
    # Every line reached the console
    console = result.stdout.decode().splitlines()
    for r in range(2):
        lines = [l for l in console if l.startswith("[%d]<stdout>:" % r)]
        assert lines == ["[%d]<stdout>:rank %d line %d ........" % (r, r, i)
                         for i in range(1, 3001)]
    # 2 x 3000 lines do not fit in 64 KiB: a file (or both) ended early, said once each,
    # and what it holds is the start of the rank's output, without a gap
    said = [l for l in err.splitlines() if "cannot write rank" in l]
    assert said, err
    for line in said:
        assert re.fullmatch(r"hvdrun: cannot write rank [01]'s stdout to '.*/logs/rank\.[01]/"
                            r"stdout': No space left on device; the file ends there, and the "
                            r"rest of that output goes to this console only", line), line
    assert len(said) == len(set(said))
    for r in range(2):
        whole = "".join("rank %d line %d ........\n" % (r, i) for i in range(1, 3001)).encode()
        assert whole.startswith(files[r])
        assert (len(files[r]) < len(whole)) == any("rank %d's" % r in l for l in said)


def test_prefix_timestamp_uses_asctime_form():
    result = run(["--prefix-output-with-timestamp", "-np", "1", "echo", "hi"])
    assert result.returncode == 0
    line = result.stdout.decode()
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\[0\]<stdout>:hi\n", line), line


def test_console_ranks_keep_the_others_off_the_console_but_in_files_and_the_summary(tmp_path):
    # Rank 3 fails only once the others have printed: its failure stops the ranks still running,
    # and on a loaded machine one that had not printed yet lost its line (1 run in 40-60).
    said = tmp_path / "said"
    said.mkdir()
    script = ('echo out $HVD_RANK; echo err $HVD_RANK >&2; '
              'if [ "$HVD_RANK" = 3 ]; then i=0; '
              'while [ $(ls %s | wc -l) -lt 3 ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); '
              'done; echo "rank 3 broke" >&2; exit 5; fi; touch %s/$HVD_RANK' % (said, said))
    result = run(["-np", "4", "--console-ranks", "0,2-2", "--output-filename", str(tmp_path),
                  "sh", "-c", script])
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 5, err
    assert sorted(out.splitlines()) == ["[0]<stdout>:out 0", "[2]<stdout>:out 2"], out
    assert "[1]<stderr>" not in err and "[3]<stderr>" not in err, err
    # The failing rank, though off the console, is named with its last stderr lines.
    assert "rank 3 on localhost failed first: exit code 5" in err, err
    assert "last stderr lines of rank 3:\n  err 3\n  rank 3 broke" in err, err
    for rank in range(4):
        assert (tmp_path / ("rank.%d" % rank) / "stdout").read_text() == "out %d\n" % rank


def test_console_ranks_outside_the_job_are_a_usage_error(tmp_path):
    flag = tmp_path / "ran"
    result = run(["-np", "2", "--console-ranks", "0,5", "touch", str(flag)])
    assert result.returncode == 64
    assert "--console-ranks: rank 5 is not in this job of 2 ranks" in result.stderr.decode()
    assert not flag.exists()
