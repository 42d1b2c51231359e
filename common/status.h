#ifndef HVD_COMMON_STATUS_H_
#define HVD_COMMON_STATUS_H_

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "common/check.h"

namespace hvd {

// Error categories. The values mirror hvd_status_t in runtime/include/hvd/c_api.h so a
// Status crosses the C boundary as a plain integer.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,
  kTimeout = 2,
  kRemoteError = 3,     // another rank or host failed
  kAborted = 4,         // the runtime or job was shut down / aborted
  kInternal = 5,
  kNotInitialized = 6,
  kInProgress = 7,
  kPreconditionFailed = 8,
  kNotFound = 9,
  kUnimplemented = 10,
  kIoError = 11,        // a socket, pipe or file failed
  kPermissionDenied = 12,  // authentication failed
};

const char* StatusCodeName(StatusCode code);

// Status is the outcome of anything the environment can make fail. OK is cheap (no
// allocation); an error carries a code and a message that already names the input, rank,
// host or tensor involved. Copyable and movable; not synchronized.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status Timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status RemoteError(std::string m) { return {StatusCode::kRemoteError, std::move(m)}; }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status NotInitialized(std::string m) { return {StatusCode::kNotInitialized, std::move(m)}; }
  static Status PreconditionFailed(std::string m) {
    return {StatusCode::kPreconditionFailed, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "<code name>: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Result<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(runtime/explicit)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(runtime/explicit)
    HVD_CHECK(!status_.ok()) << "Result constructed from an OK status without a value";
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    HVD_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  const T& value() const& {
    HVD_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  T&& value() && {
    HVD_CHECK(ok()) << status_.ToString();
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace hvd

// Propagates a non-OK Status from the current function.
#define HVD_RETURN_IF_ERROR(expr)          \
  do {                                     \
    ::hvd::Status hvd_status_ = (expr);    \
    if (!hvd_status_.ok()) return hvd_status_; \
  } while (0)

#define HVD_CONCAT_INNER_(a, b) a##b
#define HVD_CONCAT_(a, b) HVD_CONCAT_INNER_(a, b)
// HVD_ASSIGN_OR_RETURN(auto x, ComputeResult()): assigns the value or returns the status.
#define HVD_ASSIGN_OR_RETURN(lhs, expr)                                 \
  auto HVD_CONCAT_(hvd_result_, __LINE__) = (expr);                     \
  if (!HVD_CONCAT_(hvd_result_, __LINE__).ok())                         \
    return HVD_CONCAT_(hvd_result_, __LINE__).status();                 \
  lhs = std::move(HVD_CONCAT_(hvd_result_, __LINE__)).value()

#endif  // HVD_COMMON_STATUS_H_
