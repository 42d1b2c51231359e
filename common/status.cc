#include "common/status.h"

namespace hvd {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kTimeout: return "timeout";
    case StatusCode::kRemoteError: return "remote error";
    case StatusCode::kAborted: return "aborted";
    case StatusCode::kInternal: return "internal error";
    case StatusCode::kNotInitialized: return "not initialized";
    case StatusCode::kInProgress: return "in progress";
    case StatusCode::kPreconditionFailed: return "precondition failed";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kUnimplemented: return "not implemented";
    case StatusCode::kIoError: return "I/O error";
    case StatusCode::kPermissionDenied: return "permission denied";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace hvd
