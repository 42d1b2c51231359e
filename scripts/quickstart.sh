#!/usr/bin/env bash
# The README's first command: installs what is needed, builds and installs hvd, then runs the
# main job -- hvdrun launching the PyTorch training example with 2 ranks on this machine.
# It builds only what it runs and installs (HVD_BUILD_TESTS=OFF: no tests, 217 of the 373 build
# steps); scripts/test.sh reconfigures the same build dir with the tests.
# With INSTALL=0 nothing goes to /usr/local and the job runs the hvdrun just built.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
HVD_BUILD_TESTS=OFF "$root/scripts/build.sh"
build=${BUILD_DIR:-$root/build}
hvdrun=$build/cmd/hvdrun
if [ "${INSTALL:-1}" = 1 ] && [ -w /usr/local/bin ]; then
  hvdrun=$(command -v hvdrun || echo "$hvdrun")
fi
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
set -x
"$hvdrun" -np 2 /usr/bin/python3 "$root/examples/torch_train.py" --epochs 5
