"""pytest for CTest: the same exit codes, except that a run in which every collected test was
skipped (a module-level skip such as "mpirun not installed", or nothing but skips) exits 77,
which the tests declare as SKIP_RETURN_CODE, so CTest reports it as skipped, not passed.

Usage: python3 run_pytest.py <pytest arguments>
"""
import sys

import pytest

SKIP_RETURN_CODE = 77


class _Outcomes:
    def __init__(self) -> None:
        self.ran = 0
        self.skipped = 0

    def pytest_collectreport(self, report) -> None:
        if report.skipped:  # a whole module skipped at import
            self.skipped += 1

    def pytest_runtest_logreport(self, report) -> None:
        if report.skipped:
            self.skipped += 1
        elif report.when == "call" or report.failed:
            self.ran += 1


def main() -> int:
    outcomes = _Outcomes()
    code = int(pytest.main(sys.argv[1:], plugins=[outcomes]))
    if code in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED) and outcomes.ran == 0 \
            and outcomes.skipped > 0:
        print(f"run_pytest: every test was skipped; exiting {SKIP_RETURN_CODE} (CTest: skipped)")
        return SKIP_RETURN_CODE
    return code


if __name__ == "__main__":
    sys.exit(main())
