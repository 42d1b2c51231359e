// Target "rank_setup": what a job's members tell each other while they set up, over the job's
// own connections (a rank of another build, a bug or a compromised member could send anything):
//   mode 0: every rank's start-up line of knobs and process sets, judged by rank 0
//           (runtime/core/negotiation/start_agreement.h: Runtime::CheckSameEverywhere);
//   mode 1: every member's GPU identity, from which a set's rank 0 decides the GPU path
//           (runtime/transports/gpu_path.h DecideGpuPath), then the members' reading of it;
//   mode 2: the decision as a member receives it (ReadGpuDecision);
//   mode 3: a rank's data address in the rendezvous store (tcp_handshake.h ParsePeerAddress).
// The first byte picks the mode (mod 4); the rest is the mode's input.
//
// Invariants: a verdict is "1", "0" or a message, and "1" only when every line is rank 0's own;
// a rank's own line always agrees with itself; a GPU path names a decision ReadGpuDecision takes
// (NCCL only when every member has a GPU of its own and the modes agree); what reads as an
// address re-encodes to the same bytes.
#include <string>
#include <vector>

#include "common/check.h"
#include "runtime/core/negotiation/start_agreement.h"
#include "runtime/transports/gpu_path.h"
#include "runtime/transports/tcp/tcp_handshake.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

constexpr const char* kKnobNames[] = {"A", "B", "C", "D", "E", "F", "G", "H"};

std::string StartLines(FuzzInput& in) {
  // Rank 0's own values: a local size, up to 8 knobs, the process sets' text.
  const int64_t local_size = static_cast<int8_t>(in.Byte());
  std::vector<runtime::StartKnob> knobs;
  const size_t count = in.Byte() % 9;
  for (size_t i = 0; i < count; ++i) {
    int64_t value = static_cast<int8_t>(in.Byte());
    if (in.Byte() & 1) value *= int64_t{1} << 40;
    knobs.push_back({kKnobNames[i], value});
  }
  const std::string sets(in.Until('\n'));
  const std::string own = runtime::EncodeStartLine(local_size, knobs, sets);
  std::vector<std::string> lines;
  while (!in.empty() && lines.size() < 64) lines.emplace_back(in.Until('\n'));

  const std::string alone = runtime::JudgeStartLines({own, own}, local_size, knobs, sets);
  HVD_CHECK(alone == "1") << alone;
  std::vector<std::string> with_own = lines;
  with_own.insert(with_own.begin(), own);
  const std::string verdict = runtime::JudgeStartLines(with_own, local_size, knobs, sets);
  HVD_CHECK(!verdict.empty());
  if (verdict == "1") {
    for (const std::string& line : lines) HVD_CHECK(line == own) << line;
  }
  if (verdict == "1" || verdict == "0") return "";
  HVD_CHECK(verdict.size() > 1);
  HVD_CHECK(verdict.rfind("rank 0 sent", 0) != 0) << verdict;  // rank 0's own line reads
  return verdict + "\n";
}

std::string GpuIdentities(FuzzInput& in) {
  std::vector<std::string> identities;
  while (!in.empty() && identities.size() < 64) identities.emplace_back(in.Until('\0'));
  const std::string path = runtime::DecideGpuPath(identities);
  HVD_CHECK(path == "NK" || path == "N-" || path == "S" || (path.size() > 1 && path[0] == 'E'))
      << path;
  std::string decision = path;
  if (path[0] == 'N') {
    HVD_CHECK(identities.empty() || identities[0].rfind("cpu\n", 0) != 0) << identities[0];
    decision.append(runtime::kNcclUniqueIdBytes, '\x7f');
  }
  Result<runtime::GpuDecision> read = runtime::ReadGpuDecision(decision);
  HVD_CHECK(read.ok() == (path[0] != 'E')) << path;
  if (!read.ok()) return read.status().message() + "\n";
  HVD_CHECK(read->nccl == (path[0] == 'N'));
  HVD_CHECK(read->scale_kernel == (path == "NK"));
  if (read->nccl) HVD_CHECK(read->unique_id == std::string(runtime::kNcclUniqueIdBytes, '\x7f'));
  return "";
}

std::string GpuDecision(FuzzInput& in) {
  const std::string decision(in.Rest());
  Result<runtime::GpuDecision> read = runtime::ReadGpuDecision(decision);
  if (!read.ok()) return read.status().message() + "\n";
  if (read->nccl) {
    HVD_CHECK(read->unique_id.size() == runtime::kNcclUniqueIdBytes);
    HVD_CHECK(decision.size() == 2 + runtime::kNcclUniqueIdBytes);
  } else {
    HVD_CHECK(decision == "S") << decision;
  }
  return "";
}

std::string PeerAddress(FuzzInput& in) {
  const std::string value(in.Rest());
  Result<runtime::PeerAddress> address = runtime::ParsePeerAddress(value, 3);
  if (!address.ok()) {
    HVD_CHECK(address.status().message().find("rank 3") != std::string::npos);
    return address.status().message() + "\n";
  }
  HVD_CHECK(address->port > 0 && address->port <= 65535);
  const std::string again =
      runtime::EncodePeerAddress(address->host, address->port, address->hostname);
  HVD_CHECK(again == value) << again;
  return "";
}

}  // namespace

std::string FuzzRankSetup(std::string_view input) {
  FuzzInput in(input);
  switch (in.Byte() % 4) {
    case 0:
      return StartLines(in);
    case 1:
      return GpuIdentities(in);
    case 2:
      return GpuDecision(in);
    default:
      return PeerAddress(in);
  }
}

}  // namespace hvd::fuzz
