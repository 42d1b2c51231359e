#include "runtime/core/execution/adasum.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "runtime/transports/reduction.h"

namespace hvd::runtime {
namespace {

constexpr double kTinyNormSquared = 1e-8;  // Horovod's threshold for "no direction"

// Works on T (float or double) blocks: member k's part of this member's slice at blocks[k].
template <typename T>
Status CombineSlice(Communicator* comm, T* blocks, int64_t len, size_t tensors, AdasumScratch* s) {
  const int n = comm->size();
  for (int d = 1; d < n; d *= 2) {
    const int pairs = (n - d + 2 * d - 1) / (2 * d);  // k = 0, 2d, 4d, ... with k + d < n
    s->sums.assign(static_cast<size_t>(pairs) * tensors * 3, 0.0);
    for (int p = 0; p < pairs; ++p) {
      const T* a = blocks + static_cast<int64_t>(2 * d * p) * len;
      const T* b = a + static_cast<int64_t>(d) * len;
      for (const AdasumScratch::Segment& g : s->segments) {
        AdasumSums(a + g.begin, b + g.begin, g.end - g.begin,
                   &s->sums[(static_cast<size_t>(p) * tensors + g.tensor) * 3]);
      }
    }
    HVD_RETURN_IF_ERROR(comm->Allreduce(s->sums.data(), static_cast<int64_t>(s->sums.size()),
                                        DataType::kFloat64, ReduceOp::kSum));
    for (int p = 0; p < pairs; ++p) {
      T* a = blocks + static_cast<int64_t>(2 * d * p) * len;
      const T* b = a + static_cast<int64_t>(d) * len;
      for (const AdasumScratch::Segment& g : s->segments) {
        AdasumCombine<T>(a + g.begin, b + g.begin, g.end - g.begin,
                         &s->sums[(static_cast<size_t>(p) * tensors + g.tensor) * 3]);
      }
    }
  }
  return Status::OK();
}

}  // namespace

bool AdasumSupports(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
         dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
}

template <typename T>
void AdasumCombine(T* a, const T* b, int64_t count, const double* sums) {
  const double dot = sums[0], a_norm = sums[1], b_norm = sums[2];
  const double a_coeff = a_norm >= kTinyNormSquared ? 1.0 - dot / (2.0 * a_norm) : 1.0;
  const double b_coeff = b_norm >= kTinyNormSquared ? 1.0 - dot / (2.0 * b_norm) : 1.0;
  AdasumScaleAdd(a, b, count, a_coeff, b_coeff);
}

template void AdasumCombine<float>(float*, const float*, int64_t, const double*);
template void AdasumCombine<double>(double*, const double*, int64_t, const double*);

Status AdasumAllreduce(Communicator* comm, const void* in, void* out,
                       std::span<const int64_t> counts, DataType dtype, AdasumScratch* s) {
  if (!AdasumSupports(dtype)) {
    return Status::InvalidArgument(std::string("Adasum of ") + DataTypeName(dtype) + " tensors");
  }
  const int n = comm->size(), me = comm->rank();
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (total == 0) return Status::OK();  // every member has the same counts: no round at all
  if (n == 1) {
    if (out != in) std::memcpy(out, in, static_cast<size_t>(total * elem));
    return Status::OK();
  }
  // Member j combines elements [slice_start[j], slice_start[j + 1]).
  s->slice_start.resize(static_cast<size_t>(n) + 1);
  for (int j = 0; j <= n; ++j) s->slice_start[j] = total / n * j + std::min<int64_t>(j, total % n);
  s->slice_bytes.resize(static_cast<size_t>(n));
  int64_t max_piece = 0;
  for (int j = 0; j < n; ++j) {
    s->slice_bytes[j] = (s->slice_start[j + 1] - s->slice_start[j]) * elem;
    max_piece = std::max(max_piece, s->slice_bytes[j]);
  }
  const int64_t lo = s->slice_start[me], len = s->slice_start[me + 1] - lo;
  s->recv_bytes.assign(static_cast<size_t>(n), len * elem);
  // Never empty: a member whose slice is empty (fewer elements than members) still passes the
  // transports a real address.
  s->blocks.resize(static_cast<size_t>(std::max<int64_t>(n * len * elem, 1)));
  HVD_RETURN_IF_ERROR(
      comm->AlltoallvAgreed(in, s->slice_bytes, s->blocks.data(), s->recv_bytes, max_piece));
  // The tensors' parts within this member's slice.
  s->segments.clear();
  int64_t offset = 0;
  for (size_t t = 0; t < counts.size(); ++t) {
    const int64_t begin = std::max(offset, lo), end = std::min(offset + counts[t], lo + len);
    if (begin < end) s->segments.push_back({t, begin - lo, end - lo});
    offset += counts[t];
  }
  void* combined = s->blocks.data();  // member 0's block ends up holding the result
  switch (dtype) {
    case DataType::kFloat32:
      HVD_RETURN_IF_ERROR(CombineSlice<float>(comm, reinterpret_cast<float*>(s->blocks.data()), len,
                                              counts.size(), s));
      break;
    case DataType::kFloat64:
      HVD_RETURN_IF_ERROR(CombineSlice<double>(comm, reinterpret_cast<double*>(s->blocks.data()),
                                               len, counts.size(), s));
      break;
    default: {  // float16, bfloat16: in float
      const bool bf = dtype == DataType::kBFloat16;
      s->floats.resize(static_cast<size_t>(n * len));
      const auto* h = reinterpret_cast<const uint16_t*>(s->blocks.data());
      for (int64_t i = 0; i < n * len; ++i) {
        s->floats[i] = bf ? BFloat16ToFloat(h[i]) : HalfToFloat(h[i]);
      }
      HVD_RETURN_IF_ERROR(CombineSlice<float>(comm, s->floats.data(), len, counts.size(), s));
      auto* result = reinterpret_cast<uint16_t*>(s->blocks.data());
      for (int64_t i = 0; i < len; ++i) {
        result[i] = bf ? FloatToBFloat16(s->floats[i]) : FloatToHalf(s->floats[i]);
      }
      break;
    }
  }
  return comm->Allgatherv(combined, out, s->slice_bytes);
}

}  // namespace hvd::runtime
