#!/bin/bash
# Run here (Debian 12, apt reachable): downloads into .devkit/debs/ the Debian packages hvd's
# build needs that the lent GPU machine's image lacks. The device tool carries the folder
# (`carry: [".devkit"]`); scripts/device/build.sh unpacks it there into a private prefix.
# docs/gpu-machine.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
# .devkit/ is in .gitignore: the device tool carries only ignored paths.

# Headers and the libraries that go with them (the image has neither).
dev=(libcli11-dev libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libyaml-cpp-dev libyaml-cpp0.7
  libasio-dev libssh2-1-dev libssh2-1 libssl-dev zlib1g-dev nlohmann-json3-dev libeigen3-dev
  libgtest-dev libgmock-dev libgloo-dev libgloo0)
# libgloo0 needs these at link and load time (hiredis: Gloo's Redis store; rdma-core: its
# ibverbs transport). libssh2's pkg-config file requires libssl, libcrypto and zlib.
runtime=(libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200 libssl3 zlib1g)
# Fallback only: Open MPI's headers (mpi.h), used when the image's Open MPI has no mpicc/mpi.h.
# Its libmpi stays the image's (4.1.6); Debian's libopenmpi3 pulls in ~20 MiB more and is not
# carried.
mpi=(libopenmpi-dev)

mkdir -p .devkit/debs
cd .devkit/debs
rm -f ./*.deb
# A fresh machine has empty package lists: apt-get download then finds nothing.
apt-get update -qq
apt-get download "${dev[@]}" "${runtime[@]}" "${mpi[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
n=$(find . -maxdepth 1 -name '*.deb' | wc -l)
want=$((${#dev[@]} + ${#runtime[@]} + ${#mpi[@]}))
[ "$n" -eq "$want" ] || { echo "fetched $n of $want packages" >&2; exit 1; }
echo "$n packages, $(du -sh . | cut -f1) in .devkit/debs (carry limit 64 MiB with the working tree)"
