#include "runtime/transports/gloo/gloo_reduction.h"

#include <algorithm>
#include <type_traits>

#include "runtime/transports/reduction.h"

namespace hvd::runtime {
namespace {

struct SumOp {
  template <typename T>
  static T Apply(T a, T b) {
    return static_cast<T>(a + b);
  }
};
struct ProductOp {
  template <typename T>
  static T Apply(T a, T b) {
    return static_cast<T>(a * b);
  }
};
// Min and Max of floats propagate a NaN (as torch.minimum/maximum do), whichever operand holds
// it: Gloo's ring reduces own-then-peer on each rank, and std::min/std::max return their first
// operand when either is NaN, so at 2 ranks one rank got NaN and the other the peer's number
// (until 2026-12-01). Symmetric kernels make every rank's result the same.
struct MinOp {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return std::min(a, b);
  }
};
struct MaxOp {
  template <typename T>
  static T Apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return std::max(a, b);
  }
};

template <typename T, typename Op, typename S>
void Plain(S* x, const S* y, size_t n) {
  T* d = reinterpret_cast<T*>(x);
  const T* s = reinterpret_cast<const T*>(y);
  for (size_t i = 0; i < n; ++i) d[i] = Op::template Apply<T>(d[i], s[i]);
}

// bool: or for Sum/Max, and for Min/Product; any non-zero byte is true, the result is 0/1.
template <bool kAnd>
void Logical(uint8_t* x, const uint8_t* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const bool a = x[i] != 0, b = y[i] != 0;
    x[i] = kAnd ? (a && b) : (a || b);
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float), typename Op>
void Half(uint16_t* x, const uint16_t* y, size_t n) {
  for (size_t i = 0; i < n; ++i)
    x[i] = FromFloat(Op::template Apply<float>(ToFloat(x[i]), ToFloat(y[i])));
}

void And64(uint64_t* x, const uint64_t* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] &= y[i];
}
void Or64(uint64_t* x, const uint64_t* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] |= y[i];
}

gloo::ReductionType TypeOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
      return gloo::MIN;
    case ReduceOp::kMax:
      return gloo::MAX;
    case ReduceOp::kProduct:
      return gloo::PRODUCT;
    default:
      return gloo::SUM;
  }
}

// One static ReductionFunction per (kernel family, op).
template <typename S, template <typename> class Kernel>
const gloo::ReductionFunction<S>* Pick(ReduceOp op) {
  static const gloo::ReductionFunction<S> sum(gloo::SUM, &Kernel<SumOp>::template Fn<S>);
  static const gloo::ReductionFunction<S> prod(gloo::PRODUCT, &Kernel<ProductOp>::template Fn<S>);
  static const gloo::ReductionFunction<S> min(gloo::MIN, &Kernel<MinOp>::template Fn<S>);
  static const gloo::ReductionFunction<S> max(gloo::MAX, &Kernel<MaxOp>::template Fn<S>);
  switch (TypeOf(op)) {
    case gloo::MIN:
      return &min;
    case gloo::MAX:
      return &max;
    case gloo::PRODUCT:
      return &prod;
    default:
      return &sum;
  }
}

template <typename T>
struct PlainK {
  template <typename Op>
  struct K {
    template <typename S>
    static void Fn(S* x, const S* y, size_t n) {
      Plain<T, Op, S>(x, y, n);
    }
  };
};
template <typename Op>
struct HalfK {
  template <typename S>
  static void Fn(S* x, const S* y, size_t n) {
    Half<HalfToFloat, FloatToHalf, Op>(x, y, n);
  }
};
template <typename Op>
struct BF16K {
  template <typename S>
  static void Fn(S* x, const S* y, size_t n) {
    Half<BFloat16ToFloat, FloatToBFloat16, Op>(x, y, n);
  }
};
template <typename Op>
struct BoolK {
  template <typename S>
  static void Fn(S* x, const S* y, size_t n) {
    constexpr bool kAnd = std::is_same_v<Op, MinOp> || std::is_same_v<Op, ProductOp>;
    Logical<kAnd>(x, y, n);
  }
};

}  // namespace

template <typename S>
const gloo::ReductionFunction<S>* GlooReductionFor(DataType dtype, ReduceOp op) {
  if (op == ReduceOp::kAdasum) return nullptr;
  if (DataTypeSize(dtype) != sizeof(S)) return nullptr;
  if constexpr (sizeof(S) == 1) {
    switch (dtype) {
      case DataType::kUInt8:
        return Pick<S, PlainK<uint8_t>::template K>(op);
      case DataType::kInt8:
        return Pick<S, PlainK<int8_t>::template K>(op);
      case DataType::kBool:
        return Pick<S, BoolK>(op);
      default:
        return nullptr;
    }
  } else if constexpr (sizeof(S) == 2) {
    switch (dtype) {
      case DataType::kUInt16:
        return Pick<S, PlainK<uint16_t>::template K>(op);
      case DataType::kInt16:
        return Pick<S, PlainK<int16_t>::template K>(op);
      case DataType::kFloat16:
        return Pick<S, HalfK>(op);
      case DataType::kBFloat16:
        return Pick<S, BF16K>(op);
      default:
        return nullptr;
    }
  } else if constexpr (sizeof(S) == 4) {
    switch (dtype) {
      case DataType::kInt32:
        return Pick<S, PlainK<int32_t>::template K>(op);
      case DataType::kFloat32:
        return Pick<S, PlainK<float>::template K>(op);
      default:
        return nullptr;
    }
  } else {
    switch (dtype) {
      case DataType::kInt64:
        return Pick<S, PlainK<int64_t>::template K>(op);
      case DataType::kFloat64:
        return Pick<S, PlainK<double>::template K>(op);
      default:
        return nullptr;
    }
  }
}

template const gloo::ReductionFunction<uint8_t>* GlooReductionFor<uint8_t>(DataType, ReduceOp);
template const gloo::ReductionFunction<uint16_t>* GlooReductionFor<uint16_t>(DataType, ReduceOp);
template const gloo::ReductionFunction<uint32_t>* GlooReductionFor<uint32_t>(DataType, ReduceOp);
template const gloo::ReductionFunction<uint64_t>* GlooReductionFor<uint64_t>(DataType, ReduceOp);

const gloo::ReductionFunction<uint64_t>* GlooBitwiseAnd() {
  static const gloo::ReductionFunction<uint64_t> fn(gloo::CUSTOM, &And64);
  return &fn;
}

const gloo::ReductionFunction<uint64_t>* GlooBitwiseOr() {
  static const gloo::ReductionFunction<uint64_t> fn(gloo::CUSTOM, &Or64);
  return &fn;
}

}  // namespace hvd::runtime
