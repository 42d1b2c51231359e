#!/usr/bin/env bash
# The README's second command: installs what is needed, builds, and runs the whole test suite
# (ctest: unit, multiproc, e2e; GPU tests skip cleanly without a GPU). Prints ctest's summary.
#   CTEST_ARGS: extra arguments for ctest (e.g. "-L unit").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
BUILD_DIR="$build" "$root/scripts/build.sh"
cd "$build"
# Tests oversubscribe 2 cores with several ranks each, so they run one at a time.
ctest --output-on-failure --timeout 900 ${CTEST_ARGS:-}
