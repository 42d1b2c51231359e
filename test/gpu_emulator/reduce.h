// The emulated NCCL's arithmetic: reductions in the tensor's own type, each step rounded to it
// as a GPU does (float16 and bfloat16 included), in rank order; a pre-multiplied sum's later
// products enter unrounded, as NCCL's (reduce.cc kPremulFused).
#pragma once

#include <nccl.h>

#include <cstddef>
#include <vector>

namespace hvd::gpu_emulator {

// Bytes of one element of `t`; 0 for a type the emulator does not take.
size_t TypeSize(ncclDataType_t t);

// A reduction: the operator, and for a pre-multiplied sum its scalar (captured at the call, as
// NCCL lets the op be destroyed once the call that uses it is enqueued).
struct Reduction {
  ncclRedOp_t op = ncclSum;
  bool premul = false;
  double scalar = 1.0;
};

// The reduction of every rank's `count` elements at `sources[r]`, in rank order, into `out`
// (which may be one of the sources).
void ReduceAll(char* out, const std::vector<const char*>& sources, size_t count,
               ncclDataType_t type, const Reduction& red);

// out[i] = in[i] * factor for `count` elements of `type` (out may be in), the product rounded
// once to the type, as hvd's scaling kernel (runtime/transports/nccl/scale_kernels.cu); the
// factor is given in the type at `factor`.
void ScaleAll(char* out, const char* in, size_t count, ncclDataType_t type, const void* factor);

// A pre-multiplied sum's scalar, given in the tensor's type at `scalar`, as a double.
double ScalarValue(const void* scalar, ncclDataType_t type);

}  // namespace hvd::gpu_emulator
