#ifndef HVD_COMMON_CHECK_H_
#define HVD_COMMON_CHECK_H_

#include <sstream>

// HVD_CHECK(cond) << "context": an invariant that is never compiled out. On failure it prints
// file:line, the condition and the streamed context to stderr and aborts. Use Status for
// anything the environment can cause; HVD_CHECK only for programming errors.
// HVD_CHECK_EQ/NE/LT/LE/GT/GE also print both operands.

namespace hvd::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Lets `cond ? (void)0 : Voidify() & CheckFailure(...).stream() << ...` type-check.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace hvd::internal

#define HVD_CHECK(cond)                 \
  (cond) ? (void)0                      \
         : ::hvd::internal::Voidify() & \
               ::hvd::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()

#define HVD_CHECK_OP_(a, b, op)                                                            \
  ((a)op(b)) ? (void)0                                                                     \
             : ::hvd::internal::Voidify() &                                                \
                   ::hvd::internal::CheckFailure(__FILE__, __LINE__, #a " " #op " " #b).stream() \
                       << "(" << (a) << " vs " << (b) << ") "

#define HVD_CHECK_EQ(a, b) HVD_CHECK_OP_(a, b, ==)
#define HVD_CHECK_NE(a, b) HVD_CHECK_OP_(a, b, !=)
#define HVD_CHECK_LT(a, b) HVD_CHECK_OP_(a, b, <)
#define HVD_CHECK_LE(a, b) HVD_CHECK_OP_(a, b, <=)
#define HVD_CHECK_GT(a, b) HVD_CHECK_OP_(a, b, >)
#define HVD_CHECK_GE(a, b) HVD_CHECK_OP_(a, b, >=)

#endif  // HVD_COMMON_CHECK_H_
