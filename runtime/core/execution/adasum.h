#ifndef HVD_RUNTIME_CORE_EXECUTION_ADASUM_H_
#define HVD_RUNTIME_CORE_EXECUTION_ADASUM_H_

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "runtime/transports/communicator.h"
#include "runtime/transports/data_type.h"

namespace hvd::runtime {

// Adasum, Horovod's op=Adasum (Maleki et al., "Scaling Distributed Training with Adaptive
// Summation", MLSys 2021): two gradients a and b combine into
//
//   (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
//
// so that orthogonal gradients add and equal ones stay as they are (a coefficient stays 1 where
// its vector's squared norm is below 1e-8, as Horovod's: a zero vector, e.g. a joined rank's,
// leaves the other unchanged). The members combine in a binary tree: at distance d = 1, 2, 4,
// ..., member k's partial result with member k + d's, for every k that is a multiple of 2d with
// k + d < n. With a power-of-two n this is the order of Horovod's recursive doubling (rank k
// with rank k ^ d); with another n the last partial result of an odd count is carried up a
// level unchanged. Every tensor of a fused allreduce is combined on its own (Horovod's
// per-layer Adasum).

// Whether Adasum takes tensors of `dtype` (float16, bfloat16, float32, float64).
bool AdasumSupports(DataType dtype);

// What AdasumAllreduce keeps between calls, so that a repeated op allocates nothing.
struct AdasumScratch {
  std::vector<int64_t> slice_start, recv_bytes, slice_bytes;
  std::vector<char> blocks;   // every member's part of this member's slice
  std::vector<float> floats;  // the same, converted, for float16/bfloat16
  struct Segment {
    size_t tensor;
    int64_t begin, end;  // elements within the slice
  };
  std::vector<Segment> segments;
  std::vector<double> sums;  // per pair and tensor: a.b, |a|^2, |b|^2
};

// Collective over `comm`: `in` holds this member's tensors of `counts` elements each,
// concatenated (`dtype`); `out` (the same size; may be `in`: it is written only after all of
// `in` was read) receives the combination of every member's, bit-identical on every member. Each
// member combines one slice of the elements: an alltoall gives it every member's part of its slice,
// each tree level sums the pairs' partial dot products and norms per tensor over the members (an
// allreduce of a few doubles per pair and tensor), and an allgather of the combined slices ends it
// -- the bytes of a reduce-scatter plus an allgather, as a sum's allreduce, and 1/n of the
// arithmetic each.
Status AdasumAllreduce(Communicator* comm, const void* in, void* out,
                       std::span<const int64_t> counts, DataType dtype, AdasumScratch* scratch);

// The pair's combination from its summed a.b, |a|^2, |b|^2 (sums[0..3), which AdasumSums in
// reduction.h accumulates): a = a_coeff * a + b_coeff * b with the formula's coefficients.
template <typename T>
void AdasumCombine(T* a, const T* b, int64_t count, const double* sums);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_EXECUTION_ADASUM_H_
