#include "hvd_bench_check.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "check_value.h"

namespace hvd_bench {

hvd_reduce_op_t g_reduce_op = HVD_OP_SUM;
Dtype g_dtype = kDtypes[0];
ReduceData g_reduce_data = ReduceData::kNone;
std::string g_not_checked;
int g_checks = 0;

Op ParseOp(const std::string& op) {
  if (op == "broadcast") return Op::kBroadcast;
  if (op == "allgather") return Op::kAllgather;
  if (op == "alltoall") return Op::kAlltoall;
  if (op == "reducescatter") return Op::kReducescatter;
  if (op == "barrier") return Op::kBarrier;
  return Op::kAllreduce;
}

// The largest L such that every integer in [-1, L] is exact in g_dtype.
double ExactLimit() {
  switch (g_dtype.type) {
    case HVD_UINT8:
      return 255;
    case HVD_INT8:
      return 127;
    case HVD_BFLOAT16:
      return 256;
    case HVD_FLOAT16:
      return 2048;
    case HVD_FLOAT32:
      return 16777216;
    case HVD_INT32:
      return 2147483647;
    default:  // float64, int64 (compared as doubles)
      return 9007199254740992.0;
  }
}

// Significand bits of g_dtype when it is a float; 0 for the integers.
int SignificandBits() {
  switch (g_dtype.type) {
    case HVD_FLOAT32:
      return 24;
    case HVD_FLOAT64:
      return 53;
    case HVD_FLOAT16:
      return 11;
    case HVD_BFLOAT16:
      return 8;
    default:
      return 0;
  }
}

// float16's bits for v, an integer float16 holds exactly (0 or 1 <= |v| <= 2048).
uint16_t HalfBits(double v) {
  if (v == 0) return 0;
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);  // |v| = m * 2^e, m in [0.5, 1)
  const long fraction = std::lround((2 * m - 1) * 1024);
  return static_cast<uint16_t>((v < 0 ? 0x8000 : 0) | ((e + 14) << 10) | fraction);
}

double HalfValue(uint16_t h) {
  const int exp = (h >> 10) & 31, fraction = h & 1023;
  const double v = exp == 0    ? std::ldexp(fraction, -24)
                   : exp == 31 ? (fraction != 0 ? NAN : INFINITY)
                               : std::ldexp(1024 + fraction, exp - 25);
  return (h & 0x8000) != 0 ? -v : v;
}

// Writes v (exact in g_dtype) as an element of g_dtype at p.
void Store(char* p, double v) {
  switch (g_dtype.type) {
    case HVD_FLOAT32: {
      const float x = static_cast<float>(v);
      std::memcpy(p, &x, sizeof(x));
      return;
    }
    case HVD_FLOAT64:
      std::memcpy(p, &v, sizeof(v));
      return;
    case HVD_INT32: {
      const int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, sizeof(x));
      return;
    }
    case HVD_INT64: {
      const int64_t x = static_cast<int64_t>(v);
      std::memcpy(p, &x, sizeof(x));
      return;
    }
    case HVD_INT8: {
      const int8_t x = static_cast<int8_t>(v);
      std::memcpy(p, &x, sizeof(x));
      return;
    }
    case HVD_UINT8: {
      const uint8_t x = static_cast<uint8_t>(v);
      std::memcpy(p, &x, sizeof(x));
      return;
    }
    case HVD_FLOAT16: {
      const uint16_t x = HalfBits(v);
      std::memcpy(p, &x, sizeof(x));
      return;
    }
    case HVD_BFLOAT16: {  // float32's upper half: exact for the values stored
      const float f = static_cast<float>(v);
      uint32_t bits = 0;
      std::memcpy(&bits, &f, sizeof(bits));
      const uint16_t x = static_cast<uint16_t>(bits >> 16);
      std::memcpy(p, &x, sizeof(x));
      return;
    }
    default:
      return;  // not a --dtype
  }
}

// The element of g_dtype at p, as a double.
double Load(const char* p) {
  switch (g_dtype.type) {
    case HVD_FLOAT32: {
      float x;
      std::memcpy(&x, p, sizeof(x));
      return x;
    }
    case HVD_FLOAT64: {
      double x;
      std::memcpy(&x, p, sizeof(x));
      return x;
    }
    case HVD_INT32: {
      int32_t x;
      std::memcpy(&x, p, sizeof(x));
      return x;
    }
    case HVD_INT64: {
      int64_t x;
      std::memcpy(&x, p, sizeof(x));
      return static_cast<double>(x);
    }
    case HVD_INT8: {
      int8_t x;
      std::memcpy(&x, p, sizeof(x));
      return x;
    }
    case HVD_UINT8: {
      uint8_t x;
      std::memcpy(&x, p, sizeof(x));
      return x;
    }
    case HVD_FLOAT16: {
      uint16_t x;
      std::memcpy(&x, p, sizeof(x));
      return HalfValue(x);
    }
    case HVD_BFLOAT16: {
      uint16_t x;
      std::memcpy(&x, p, sizeof(x));
      const uint32_t bits = static_cast<uint32_t>(x) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof(f));
      return f;
    }
    default:
      return NAN;  // not a --dtype
  }
}

// The reductions' check data for --reduce-op and --dtype at n ranks, or kNone with the reason
// in g_not_checked.
ReduceData ChooseReduceData(int n) {
  const double limit = ExactLimit(), ranks = n;
  const char* name = "sum";
  switch (g_reduce_op) {
    case HVD_OP_ADASUM:
      g_not_checked = "--reduce-op adasum has no exact expected value (a ratio of dot products)";
      return ReduceData::kNone;
    case HVD_OP_PRODUCT:
      return ReduceData::kOneRank;
    case HVD_OP_MIN:
    case HVD_OP_MAX:
      if (ranks + 6 <= limit) return ReduceData::kSpread;
      name = g_reduce_op == HVD_OP_MIN ? "min" : "max";
      break;
    default:  // sum, average
      if (ranks * (ranks + 1) / 2 + 6 * ranks <= limit) return ReduceData::kSpread;
      if (ranks + std::ceil(ranks / 2) <= limit) return ReduceData::kParity;
  }
  g_not_checked = std::string("the ") + name + " of " + std::to_string(n) +
                  " ranks' check data leaves " + g_dtype.name + "'s exact integers";
  return ReduceData::kNone;
}

// Rank `rank`'s element i of the reductions' check data.
double ReduceInput(int rank, int n, size_t i) {
  const size_t r = static_cast<size_t>(rank);
  switch (g_reduce_data) {
    case ReduceData::kSpread:
      return static_cast<double>(r + 1 + i % 7);
    case ReduceData::kParity:
      return static_cast<double>(1 + (r + i) % 2);
    default:  // kOneRank
      return r == i % static_cast<size_t>(n) ? static_cast<double>(2 + i % 3) : 1.0;
  }
}

// Element i of the reduction over n ranks of the check data.
double ReduceResult(int n, size_t i) {
  if (g_reduce_data == ReduceData::kOneRank) return static_cast<double>(2 + i % 3);
  const double ranks = n, m = static_cast<double>(i % 7);
  if (g_reduce_op == HVD_OP_MIN) return 1 + m;
  if (g_reduce_op == HVD_OP_MAX) return ranks + m;
  const double odd = i % 2 == 0 ? n / 2 : (n + 1) / 2;  // ranks whose r + i is odd
  const double sum =
      g_reduce_data == ReduceData::kSpread ? ranks * (ranks + 1) / 2 + ranks * m : ranks + odd;
  return g_reduce_op == HVD_OP_AVERAGE ? sum / ranks : sum;
}

// How far a result may be from ReduceResult: only Average's, whose 1/n is inexact.
double Tolerance(int n, double want) {
  if (g_reduce_op != HVD_OP_AVERAGE) return 0;
  const int bits = SignificandBits();
  if (bits == 0) return 1;           // integers: scaled in double, truncated
  if ((n & (n - 1)) == 0) return 0;  // 1/n exact
  // floats: n units in the last place (1/n is rounded, and NCCL may scale each input)
  return std::fabs(want) * n * std::ldexp(1.0, 1 - bits);
}

// Whether `op` is checked (barrier: nothing to check; reductions: unless kNone).
bool Checked(Op op) {
  if (op == Op::kBarrier) return false;
  return (op != Op::kAllreduce && op != Op::kReducescatter) || g_reduce_data != ReduceData::kNone;
}

// A movement op's check value v (a non-negative integer) wrapped into the dtype's exact range.
double Wrap(double v) { return std::fmod(v, ExactLimit() + 1); }

// What rank `rank` of n puts at element i of its input (`count` elements) for the check of
// `op`; tensor t of --many shifts the index by t.
double CheckInput(Op op, int rank, int n, size_t count, size_t i, size_t t) {
  const size_t per = count / static_cast<size_t>(n);
  switch (op) {
    case Op::kBroadcast:
      if (rank == 0) return static_cast<double>(7 + (i + t) % 13);
      return g_dtype.type == HVD_UINT8 ? 255.0 : -1.0;
    case Op::kAllgather:
      return Wrap(rank * 1000.0 + static_cast<double>((i + t) % 1000));
    case Op::kAlltoall:
      return Wrap(rank * 100.0 + static_cast<double>(i / per + (i % per + t) % 5));
    default:  // allreduce, reducescatter
      return ReduceInput(rank, n, i + t);
  }
}

// Elements of rank me's result of `op` on inputs of `count` elements.
size_t ResultCount(Op op, int n, size_t count) {
  if (op == Op::kAllgather) return count * static_cast<size_t>(n);
  if (op == Op::kReducescatter) return count / static_cast<size_t>(n);
  return count;
}

// What element j of rank me's result must be.
double CheckResult(Op op, int me, int n, size_t count, size_t j, size_t t) {
  const size_t per = count / static_cast<size_t>(n);
  switch (op) {
    case Op::kBroadcast:
      return static_cast<double>(7 + (j + t) % 13);
    case Op::kAllgather:
      return Wrap(static_cast<double>(j / count) * 1000 +
                  static_cast<double>((j % count + t) % 1000));
    case Op::kAlltoall:
      return Wrap(static_cast<double>(j / per) * 100 + me + static_cast<double>((j % per + t) % 5));
    case Op::kReducescatter:
      return ReduceResult(n, static_cast<size_t>(me) * per + j + t);
    default:  // allreduce
      return ReduceResult(n, j + t);
  }
}

// Fills `data` (`count` elements of g_dtype) with rank `rank`'s check input of tensor t.
void FillCheckInput(Op op, int rank, int n, char* data, size_t count, size_t t) {
  for (size_t i = 0; i < count; ++i)
    Store(data + i * g_dtype.size, CheckInput(op, rank, n, count, i, t));
}

// "" when `got` (`got_bytes` of g_dtype elements) is rank me's result of the check of `op` on
// inputs of `count` elements (tensor t), else what is wrong with it (its first wrong element).
std::string Compare(Op op, int me, int n, size_t count, size_t t, const char* got,
                    size_t got_bytes) {
  const size_t want_count = ResultCount(op, n, count);
  if (got_bytes != want_count * g_dtype.size) {
    return "the result has " + std::to_string(got_bytes / g_dtype.size) + " elements, expected " +
           std::to_string(want_count);
  }
  for (size_t j = 0; j < want_count; ++j) {
    const double want = CheckResult(op, me, n, count, j, t);
    const double value = Load(got + j * g_dtype.size);
    if (std::fabs(value - want) <= Tolerance(n, want)) continue;  // a NaN never passes
    return "element " + std::to_string(j) + " is " + CheckValueText(value) + ", expected " +
           CheckValueText(want);
  }
  return "";
}

}  // namespace hvd_bench
