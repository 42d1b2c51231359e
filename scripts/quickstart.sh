#!/usr/bin/env bash
# The README's first command: installs what is needed, builds and installs hvd, then runs the
# main job -- hvdrun launching the PyTorch training example with 2 ranks on this machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${BUILD_DIR:-$root/build}
hvdrun=$(command -v hvdrun || echo "$build/cmd/hvdrun")
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
set -x
"$hvdrun" -np 2 /usr/bin/python3 "$root/examples/torch_train.py" --epochs 5
