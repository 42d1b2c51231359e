// Target "negotiation": the coordinator's wire messages (runtime/core/negotiation/message.h),
// which cross hosts on the data connections of hvd's TCP transport, of Gloo and of MPI: past
// the TCP transport's handshake nothing authenticates them, so an on-path attacker, a rank of
// another build or a corrupted stream writes them (docs/threat-model.md).
//
// The first byte picks the side:
// - even: rank 0's side. The next byte is the set's size (1 + b % 8), the next the fusion
//   threshold (0: no fusion, else 2^(b % 32) bytes; bit 5: groups fuse only among themselves).
//   Then records, each a byte (the sending rank, b % size; bit 7: rank 0 takes what is ready
//   after it, as at the end of a cycle), a 2-byte little-endian length and that many bytes of
//   one rank's request list. Each list goes through what Controller::CoordinateLocked does
//   with it: DecodeRequestList, every request added to the Coordinator under the position it
//   came from, TakeReady, PlanFusion, EncodeResponseList.
// - odd: a member's side. The next byte is the set's size (1 + b % 8), the rest a response list
//   as rank 0's broadcast delivers it, given to DecodeResponseList and CheckResponseList (what
//   Controller::Negotiate does before any size in it is used).
//
// The outcome holds the decoders' errors and the errors rank 0 answers requests with.
// Invariants: what decodes re-encodes to bytes that decode to the same list, and the response
// list rank 0 encodes decodes on the members and passes CheckResponseList.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/check.h"
#include "runtime/core/negotiation/coordinator.h"
#include "runtime/core/negotiation/fusion_planner.h"
#include "runtime/core/negotiation/message.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

void CheckRequestRoundTrip(const runtime::RequestList& list) {
  const std::string once = runtime::EncodeRequestList(list);
  Result<runtime::RequestList> again = runtime::DecodeRequestList(once);
  HVD_CHECK(again.ok()) << again.status().message();
  HVD_CHECK(runtime::EncodeRequestList(*again) == once);
}

// Decodes `bytes` as a member would and checks that it encodes back to the same bytes.
Result<runtime::ResponseList> DecodeAndCheckResponses(const std::string& bytes) {
  Result<runtime::ResponseList> list = runtime::DecodeResponseList(bytes);
  if (!list.ok()) return list;
  const std::string once = runtime::EncodeResponseList(*list);
  Result<runtime::ResponseList> again = runtime::DecodeResponseList(once);
  HVD_CHECK(again.ok()) << again.status().message();
  HVD_CHECK(runtime::EncodeResponseList(*again) == once);
  return list;
}

std::string RankZeroSide(FuzzInput* in) {
  std::string outcome;
  const int size = 1 + in->Byte() % 8;
  const uint8_t fusion = in->Byte();
  runtime::FusionOptions options;
  options.threshold_bytes = fusion % 32 == 0 ? 0 : int64_t{1} << (fusion % 32);
  options.disable_group_fusion = (fusion & 0x20) != 0;
  runtime::Coordinator coordinator(size);
  const auto now = std::chrono::steady_clock::now();

  auto take_ready = [&] {
    runtime::ResponseList out;
    out.responses = runtime::PlanFusion(coordinator.TakeReady(), options);
    for (const runtime::Response& r : out.responses) {
      if (r.type == runtime::OpType::kError) Note(&outcome, r.error);  // what the ranks raise
      (void)runtime::ResponseBytes(r);
    }
    Result<runtime::ResponseList> sent = DecodeAndCheckResponses(runtime::EncodeResponseList(out));
    HVD_CHECK(sent.ok()) << sent.status().message();
    const Status shaped = runtime::CheckResponseList(*sent, size);
    HVD_CHECK(shaped.ok()) << shaped.message();
    HVD_CHECK_EQ(sent->responses.size(), out.responses.size());
    (void)coordinator.Pending();  // the stall inspector's view
  };

  while (!in->empty()) {
    const uint8_t head = in->Byte();
    const int rank = head % 8 % size;
    const size_t length = in->Byte() | static_cast<size_t>(in->Byte()) << 8;
    const std::string bytes(in->Take(length));
    Result<runtime::RequestList> list = runtime::DecodeRequestList(bytes);
    Note(&outcome, list.status());
    if (list.ok()) {
      CheckRequestRoundTrip(*list);
      for (runtime::Request& q : list->requests) {
        q.rank = rank;  // as CoordinateLocked: the position, not the payload
        coordinator.Add(q, now);
      }
    }
    if (head & 0x80) take_ready();
  }
  take_ready();
  return outcome;
}

}  // namespace

std::string FuzzNegotiation(std::string_view input) {
  FuzzInput in(input);
  if (in.Byte() % 2 == 0) return RankZeroSide(&in);
  std::string outcome;
  const int size = 1 + in.Byte() % 8;
  Result<runtime::ResponseList> list = DecodeAndCheckResponses(std::string(in.Rest()));
  Note(&outcome, list.status());
  if (list.ok()) Note(&outcome, runtime::CheckResponseList(*list, size));
  return outcome;
}

}  // namespace hvd::fuzz
