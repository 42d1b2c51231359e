#ifndef HVD_RUNTIME_CORE_TENSOR_SHAPE_H_
#define HVD_RUNTIME_CORE_TENSOR_SHAPE_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace hvd::runtime {

// A tensor's dimensions, stored inline like hvd_tensor_t's (at most kMaxDims), so describing
// a tensor never allocates. A count above kMaxDims is kept (and refused by the enqueue
// checks); only the first kMaxDims values are stored.
class TensorShape {
 public:
  static constexpr size_t kMaxDims = 8;
  TensorShape() = default;
  TensorShape(std::initializer_list<int64_t> dims) : TensorShape(dims.begin(), dims.size()) {}
  TensorShape(const int64_t* dims, size_t n) : ndim_(n) {
    std::copy(dims, dims + std::min(n, kMaxDims), dims_.begin());
  }
  explicit TensorShape(const std::vector<int64_t>& dims) : TensorShape(dims.data(), dims.size()) {}

  size_t size() const { return ndim_; }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + std::min(ndim_, kMaxDims); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  bool empty() const { return ndim_ == 0; }
  std::vector<int64_t> ToVector() const { return std::vector<int64_t>(begin(), end()); }
  friend bool operator==(const TensorShape& a, const TensorShape& b) {
    return a.ndim_ == b.ndim_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  std::array<int64_t, kMaxDims> dims_{};
  size_t ndim_ = 0;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_TENSOR_SHAPE_H_
