// Target "kv_messages": the bodies of key-value requests (what the rendezvous server decodes
// from an authenticated worker) and responses (what KvClient decodes from the server),
// common/kv_messages.h. Input: the frame type byte, then the body. A decoded body re-encodes
// to exactly its bytes (the encoding has one form per message). The body is also read as a
// shutdown cause's value (DecodeShutdownCause: hvdrun reads it from the store to say which rank
// stopped a job), which must come out as a rank only from the rank as written (decimal).
#include <optional>
#include <string>
#include <string_view>

#include "common/check.h"
#include "common/kv_messages.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzKvMessages(std::string_view input) {
  FuzzInput in(input);
  const auto op = static_cast<control::FrameType>(in.Byte());
  std::string_view body = in.Rest();
  std::string outcome;

  Result<control::KvRequest> request = control::DecodeKvRequest(op, body);
  Note(&outcome, request.status());
  if (request.ok()) {
    HVD_CHECK(control::EncodeKvRequest(*request) == body) << "request does not round-trip";
  }
  Result<control::KvResponse> response = control::DecodeKvResponse(body);
  Note(&outcome, response.status());
  if (response.ok()) {
    HVD_CHECK(control::EncodeKvResponse(*response) == body) << "response does not round-trip";
  }
  if (std::optional<int> rank = control::DecodeShutdownCause(body)) {
    HVD_CHECK(*rank >= 0 && std::to_string(*rank) == body)
        << "shutdown cause '" << body << "' read as rank " << *rank;
  }
  return outcome;
}

}  // namespace hvd::fuzz
