#!/usr/bin/env bash
# The README's second command: installs what is needed, builds, and runs the whole test suite
# (ctest: unit, multiproc, e2e; GPU tests skip cleanly without a GPU). Prints ctest's summary,
# then the summary line of every pytest run inside it.
#   CTEST_ARGS: extra arguments for ctest (e.g. "-L unit").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
BUILD_DIR="$build" HVD_BUILD_TESTS=ON "$root/scripts/build.sh"
cd "$build"
# Tests oversubscribe 2 cores with several ranks each, so they run one at a time.
rc=0
ctest --output-on-failure --timeout 900 ${CTEST_ARGS:-} || rc=$?
# The pytest runs inside ctest's tests: their summary lines, one per test (a multi-rank run's
# ranks each print one; rank 0's is kept), from ctest's log.
log=Testing/Temporary/LastTest.log
if [ -f "$log" ]; then
  echo "pytest summaries (per ctest test):"
  awk '/^[0-9]+\/[0-9]+ Test: / { name = $3; shown = 0 }
       /[0-9]+ (passed|failed|error|errors|skipped)(,| in )/ && !shown {
         line = $0; sub(/^\[[0-9]+\]<stdout>:/, "", line); gsub(/=/, "", line)
         gsub(/^ +| +$/, "", line); printf "  %-40s %s\n", name, line; shown = 1 }' "$log"
fi
exit "$rc"
