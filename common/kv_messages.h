#ifndef HVD_COMMON_KV_MESSAGES_H_
#define HVD_COMMON_KV_MESSAGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/frame.h"
#include "common/status.h"

// Bodies of the key-value requests and responses carried by control-channel frames
// (common/frame.h). The operation is the frame type; the body holds its fields in this
// fixed order (byte_codec.h encoding):
//   kSet          bytes key | bytes value
//   kGet, kDelete bytes key
//   kWait         bytes key | u64 timeout_ms
//   kAdd          bytes key | i64 delta
//   kFinishScope  bytes prefix | i64 expected
//   kResponse     u32 status code | bytes message | bytes value | i64 number
// Pure functions, no state.
namespace hvd::control {

// A worker's report that it is failing on its own (an uncaught exception, hvd_report_failure),
// under "failure/<rank>": hvdrun names that rank first in its failure summary, not a peer that
// only failed because this one shut down and happened to exit before it.
inline constexpr std::string_view kFailureReportPrefix = "failure/";
// A rank whose collectives were failed by peers' shutdown (an agreed shutdown it did not ask
// for), under "shutdown_by/<rank>": the first rank that asked, in decimal; or by the loss of a
// peer (Runtime::ReportLostMember): that peer. When this rank then exits failing before that
// one has, hvdrun waits for it (up to half the grace period, following a chain of them) and
// names it, with its own exit code: a rank ended by sys.exit(7), or SIGKILLed, say.
inline constexpr std::string_view kShutdownCausePrefix = "shutdown_by/";
// The key of `rank`'s cause: "shutdown_by/<rank>"; in round `round` of an elastic job (round > 0)
// "shutdown_by/<round>/<rank>", since ranks change from round to round and the driver maps
// (round, rank) to its workers.
std::string ShutdownCauseKey(int64_t round, int rank);
// The rank a cause key holds (written as its decimal number); nullopt for anything else.
std::optional<int> DecodeShutdownCause(std::string_view value);
// The stall inspector's (a set's rank 0) request for the stacks of the ranks it found missing
// from a collective, the first time it names each: their global ranks in decimal, separated by
// commas ("1,3"). hvdrun asks those ranks for their Python stacks (SIGQUIT to hvdrun asks every
// rank).
inline constexpr std::string_view kStackRequestKey = "stacks";

struct KvRequest {
  FrameType op = FrameType::kGet;
  std::string key;  // the prefix for kFinishScope
  std::string value;
  int64_t number = 0;       // kAdd delta, kFinishScope expected count
  uint64_t timeout_ms = 0;  // kWait
};

struct KvResponse {
  StatusCode code = StatusCode::kOk;
  std::string message;  // empty when OK
  std::string value;    // kGet / kWait
  int64_t number = 0;   // kAdd result
};

std::string EncodeKvRequest(const KvRequest& request);
// InvalidArgument when `op` is not a request type or the body does not match its schema.
Result<KvRequest> DecodeKvRequest(FrameType op, std::string_view body);

std::string EncodeKvResponse(const KvResponse& response);
// The bytes EncodeKvResponse adds to a value when the message is empty (the status code, the two
// lengths and the number): a stored value must leave that much room under the frame cap, or the
// answer to `get` could not carry it.
inline constexpr size_t kKvResponseOverhead = 20;
Result<KvResponse> DecodeKvResponse(std::string_view body);

}  // namespace hvd::control

#endif  // HVD_COMMON_KV_MESSAGES_H_
