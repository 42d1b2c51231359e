#ifndef HVD_RUNTIME_CORE_REUSE_VECTOR_H_
#define HVD_RUNTIME_CORE_REUSE_VECTOR_H_

#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <utility>
#include <vector>

namespace hvd::runtime {

// ReuseVector is a sequence whose elements outlive clear() and shrinking: refilling it reuses
// each slot's own buffers (a std::string's characters, a vector's storage), so a steady state
// that fills it with similar contents every cycle makes no heap allocation. This is how the
// background thread's per-cycle lists (tensor names of a fused response, the cycle's
// responses) stay allocation-free (bench/README.md "Heap allocations per op").
//
// Only [0, size()) is the content. Slots past size() keep stale values: Next() hands one out
// as it was, and the caller must assign every field. Copy assignment assigns element-wise into
// the existing slots. Not thread-safe.
template <typename T>
class ReuseVector {
 public:
  ReuseVector() = default;
  ReuseVector(std::initializer_list<T> items) : items_(items), size_(items_.size()) {}
  ReuseVector(const ReuseVector& other) : items_(other.begin(), other.end()), size_(other.size_) {}
  ReuseVector(ReuseVector&& other) noexcept
      : items_(std::move(other.items_)), size_(std::exchange(other.size_, 0)) {}
  ReuseVector& operator=(const ReuseVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  ReuseVector& operator=(ReuseVector&& other) noexcept {
    items_ = std::move(other.items_);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  ReuseVector& operator=(std::initializer_list<T> items) {
    assign(items.begin(), items.end());
    return *this;
  }

  template <typename It>
  void assign(It first, It last) {
    clear();
    for (; first != last; ++first) push_back(*first);
  }
  // The next slot, grown if needed, holding whatever it held before.
  T& Next() {
    if (size_ == items_.size()) items_.emplace_back();
    return items_[size_++];
  }
  // Copy-assigns (also from an rvalue) so the slot keeps its own buffer. `value` must not be
  // an element of this vector.
  template <typename U>
  void push_back(const U& value) {
    Next() = value;
  }
  template <typename It>
  void append(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (items_.size() < n) items_.resize(n);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return items_[i]; }
  const T& operator[](size_t i) const { return items_[i]; }
  const T& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("ReuseVector::at");
    return items_[i];
  }
  T& front() { return items_[0]; }
  const T& front() const { return items_[0]; }
  T& back() { return items_[size_ - 1]; }
  const T& back() const { return items_[size_ - 1]; }
  T* data() { return items_.data(); }
  const T* data() const { return items_.data(); }
  T* begin() { return items_.data(); }
  T* end() { return items_.data() + size_; }
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + size_; }

  std::vector<T> ToVector() const { return std::vector<T>(begin(), end()); }

  friend bool operator==(const ReuseVector& a, const ReuseVector& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i) {
      if (!(a.items_[i] == b.items_[i])) return false;
    }
    return true;
  }

 private:
  std::vector<T> items_;
  size_t size_ = 0;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_REUSE_VECTOR_H_
