#!/bin/bash
# Run on the lent GPU machine from the repository root. Its image has CUDA, NCCL, PyTorch,
# Open MPI, cmake, ninja and pybind11 but none of Debian's -dev packages and no network; the
# .debs that scripts/device/fetch-debs.sh put in .devkit/debs/ travel with the call
# (`carry: [".devkit"]`). This unpacks them into /tmp/hvd-deps (never into /), points their
# pkg-config and CMake files there, builds hvd into build-gpu/ with the image's python3 and
# writes build-gpu/device-env.sh for the commands that run it. docs/gpu-machine.md.
#
# HVD_PYTHON overrides the interpreter (here, on Debian: HVD_PYTHON=/usr/bin/python3);
# HVD_NINJA_JOBS caps ninja's parallelism; HVD_CMAKE_ARGS adds cmake arguments;
# HVD_MPI_FALLBACK=1 uses the carried MPI headers even where mpicc works (to test that path).
# HVD_BUILD_SET=device builds what scripts/device/check.sh runs: every target but the CPU unit
# tests' (test/unit, test/multiproc, test/fuzz: CI runs them on every change) and the GPU
# emulator's (a GPU is there), keeping the GPU unit tests nccl_group_test and gpu_path_test;
# unset, everything.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
prefix=/tmp/hvd-deps
lib=$prefix/usr/lib/x86_64-linux-gnu
libdirs="$lib:$prefix/usr/lib:$prefix/lib/x86_64-linux-gnu"
shopt -s nullglob
debs=(.devkit/debs/*.deb)
[ ${#debs[@]} -gt 0 ] || { echo "no .devkit/debs/*.deb: run scripts/device/fetch-debs.sh here and carry .devkit" >&2; exit 1; }
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH

rm -rf "$prefix" && mkdir -p "$prefix"
for deb in "${debs[@]}"; do dpkg -x "$deb" "$prefix"; done

# pkg-config files say prefix=/usr (or -I/usr/include); CMake files are relocatable except for
# a few absolute "/usr/..." paths (Gloo's imported location). Point all of them at the prefix.
find "$prefix" -name '*.pc' -exec sed -i -E \
  -e "s#^([A-Za-z_]+=)/usr#\1$prefix/usr#" -e "s#([-][IL])/usr/#\1$prefix/usr/#g" {} +
find "$prefix" -name '*.cmake' -exec sed -i -E "s#\"/usr([\"/])#\"$prefix/usr\1#g" {} +

# Absolute links (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13) must point into the prefix.
while IFS= read -r l; do
  t=$(readlink "$l")
  if [ -e "$prefix$t" ]; then ln -sfn "$prefix$t" "$l"; fi
done < <(find "$prefix" -type l -lname '/*')
# Runtime libraries the image already has (its OpenSSL, zlib, rdma-core) win over the carried
# fallbacks: the prefix's soname link is re-pointed at the image's file, so the linker and the
# loader see one copy. Libraries whose headers we compile against (fmt, spdlog, ...) stay ours.
for so in libssl.so.3 libcrypto.so.3 libz.so.1 libibverbs.so.1 libnl-3.so.200 libnl-route-3.so.200; do
  img=$(ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ && !n++ { print $NF }')
  [ -n "$img" ] || continue
  for d in ${libdirs//:/ }; do
    [ -e "$d/$so" ] || [ -L "$d/$so" ] || continue
    rm -f "$d/$so" "$d/$so".* && ln -s "$img" "$d/$so"
  done
done
# Dev links left dangling by that (libz.so -> ...libz.so.1.2.13): point each at its soname link.
for d in ${libdirs//:/ }; do
  for l in "$d"/*.so; do
    [ -e "$l" ] && continue
    for d2 in ${libdirs//:/ }; do
      for c in "$d2/$(basename "$l")".[0-9]*; do
        if [ -e "$c" ]; then ln -sf "$c" "$l" && continue 3; fi
      done
    done
  done
done
bad=$(grep -rIl -E '(=|"|-[IL])/usr[/"]' "$prefix" --include='*.pc' --include='*.cmake' || true)
[ -z "$bad" ] || { echo "still pointing at /usr: $bad" >&2; exit 1; }

python=${HVD_PYTHON:-$(command -v python3)}
export PKG_CONFIG_PATH=$lib/pkgconfig:$prefix/usr/share/pkgconfig
export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# NCCL: the CUDA toolkit's, else pip's nvidia-nccl beside torch.
nccl_root=""
if [ ! -e /usr/local/cuda/include/nccl.h ]; then
  nccl_root=$("$python" -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)
fi
[ -n "$nccl_root" ] && export LD_LIBRARY_PATH=$nccl_root/lib:$LD_LIBRARY_PATH

# MPI: the image's wrapper (mpicc) when its mpi.h is there; else Debian's Open MPI 4.1 headers
# from the prefix against the image's libmpi.so.40 (same 4.x ABI); else no MPI backend.
mpi_args=()
mpi_note="mpicc $(command -v mpicc || echo none)"
has_wrapper_headers() {
  local d
  for d in $(mpicc --showme:incdirs 2>/dev/null) /usr/include; do [ -e "$d/mpi.h" ] && return 0; done
  return 1
}
if [ -n "${HVD_MPI_FALLBACK:-}" ] || ! command -v mpicc >/dev/null || ! has_wrapper_headers; then
  libmpi=$(ldconfig -p | awk '$1 == "libmpi.so.40" && /x86-64/ && !n++ { print $NF }')
  if [ -z "$libmpi" ] && command -v mpirun >/dev/null; then
    libmpi=$(ls "$(dirname "$(readlink -f "$(command -v mpirun)")")"/../lib/libmpi.so.40 2>/dev/null || true)
  fi
  mpi_inc=$lib/openmpi/include
  if [ -n "$libmpi" ] && [ -e "$mpi_inc/mpi.h" ]; then
    mpi_args=(-DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_C_COMPILER=NOTFOUND
      "-DMPI_C_HEADER_DIR=$mpi_inc" "-DMPI_C_ADDITIONAL_INCLUDE_DIRS=$mpi_inc/openmpi" -DMPI_C_LIB_NAMES=mpi "-DMPI_mpi_LIBRARY=$libmpi")
    mpi_note="carried headers $mpi_inc + image's $libmpi"
  else
    mpi_args=(-DHVD_WITH_MPI=OFF)
    mpi_note="none usable (libmpi.so.40: ${libmpi:-not found}); MPI backend off"
  fi
fi

pybind_args=()
if pyb=$("$python" -m pybind11 --cmakedir 2>/dev/null); then pybind_args=("-Dpybind11_DIR=$pyb"); fi

echo "== host: $(uname -m), $(nproc) cores; gcc $(gcc -dumpfullversion); $(cmake --version | head -1); ninja $(ninja --version)"
echo "== gpu: $(nvidia-smi -L 2>/dev/null | head -1 || true)"
echo "== nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [^,]*' || echo 'not found')"
echo "== python: $python $("$python" -c 'import sys; print(sys.version.split()[0])') torch $("$python" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())' 2>&1 | tail -1)"
echo "== pybind11: ${pyb:-CMake default search}; MPI: $mpi_note"
echo "== deps: ${#debs[@]} .debs unpacked into $prefix"

mkdir -p build-gpu
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$prefix/usr;$lib/cmake;$prefix/usr/share/cmake" \
  -DCMAKE_INCLUDE_PATH="$prefix/usr/include" -DCMAKE_LIBRARY_PATH="$lib;$prefix/usr/lib" \
  -DOPENSSL_ROOT_DIR="$prefix/usr" -DNCCL_ROOT="$nccl_root" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$libdirs" \
  -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-rpath-link,$libdirs" \
  -DHVD_PYTHON_EXECUTABLE="$python" "${pybind_args[@]}" "${mpi_args[@]}" ${HVD_CMAKE_ARGS:-} \
  >build-gpu/configure.log 2>&1 || { tail -40 build-gpu/configure.log; exit 1; }
grep "hvd backends" build-gpu/configure.log
grep -E '^(NCCL_INCLUDE_DIR|NCCL_LIBRARY|GLOO_LIBRARY|spdlog_DIR|fmt_DIR|GTest_DIR|MPI_C_LIB_NAMES|MPI_mpi_LIBRARY):' \
  build-gpu/CMakeCache.txt | sed 's/^/== /'
# The inputs of a directory's `all` (ninja -t query): its subdirectories' `all` and its targets.
inputs() { ninja -C build-gpu -t query "$1" | awk '/^  input:/ { f = 1; next } /^  outputs:/ { f = 0 } f { print $1 }'; }
targets=()
if [ "${HVD_BUILD_SET:-all}" = device ]; then
  mapfile -t targets < <(
    inputs all | grep -vx test/all
    inputs test/all | grep -Ev '^test/(unit/|multiproc/|fuzz/|gpu_emulator/)'
    for t in nccl_group_test gpu_path_test; do
      ninja -C build-gpu -t query "$t" >/dev/null 2>&1 && echo "$t"
    done)
  echo "== building ${#targets[@]} of the targets (HVD_BUILD_SET=device): ${targets[*]}"
fi
ninja -C build-gpu ${HVD_NINJA_JOBS:+-j$HVD_NINJA_JOBS} "${targets[@]}" >build-gpu/build.log 2>&1 ||
  { grep -B2 -A12 -E "error|FAILED" build-gpu/build.log | head -60; exit 1; }
cat >build-gpu/device-env.sh <<ENV
# source this to run what build-gpu built (scripts/device/build.sh wrote it)
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH
export PYTHONPATH=$root/build-gpu/python
export PATH=$root/build-gpu/cmd:\$PATH
ENV
echo "== built build-gpu (logs: build-gpu/configure.log, build-gpu/build.log); env: build-gpu/device-env.sh"
build-gpu/cmd/hvdrun -cb | tail -9
