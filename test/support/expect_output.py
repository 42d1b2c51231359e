"""Runs a command for CTest and passes only when it exits 0 AND its output matches a pattern.

CTest's PASS_REGULAR_EXPRESSION alone ignores the exit code, so a command that printed the
line and then crashed would pass.

Usage: python3 expect_output.py <regex> <command> [args...]
"""
import re
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 3:
        print("usage: expect_output.py <regex> <command> [args...]", file=sys.stderr)
        return 2
    pattern, command = sys.argv[1], sys.argv[2:]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(result.stdout)
    if result.returncode != 0:
        print(f"expect_output: {command[0]} exited {result.returncode}")
        return 1
    if not re.search(pattern, result.stdout):
        print(f"expect_output: the output does not match {pattern!r}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
