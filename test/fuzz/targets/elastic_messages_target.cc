// Target "elastic_messages": the text values the elastic driver and its workers read from the
// job's keys (common/elastic_messages.h): a mailbox message, a ready report, a host update.
// The input is the value; each decoder gets it. What decodes, re-encodes to text that decodes
// to the same values.
#include "common/check.h"
#include "common/elastic_messages.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzElasticMessages(std::string_view input) {
  namespace elastic = control::elastic;
  std::string outcome;
  Result<elastic::Message> message = elastic::DecodeMessage(input);
  Note(&outcome, message.status());
  if (message.ok()) {
    // An assignment's topology is one a runtime can start with (the checks the launchers'
    // variables get): every rank within its size.
    const elastic::Assignment& a = message->assignment;
    if (!message->removed) {
      HVD_CHECK(a.round >= 1 && a.size >= 1 && a.rank >= 0 && a.rank < a.size);
      HVD_CHECK(a.local_size >= 1 && a.local_size <= a.size && a.local_rank >= 0 &&
                a.local_rank < a.local_size);
      HVD_CHECK(a.cross_size >= 1 && a.cross_size <= a.size && a.cross_rank >= 0 &&
                a.cross_rank < a.cross_size);
    }
    Result<elastic::Message> again = elastic::DecodeMessage(elastic::EncodeMessage(*message));
    HVD_CHECK(again.ok()) << again.status().message();
    HVD_CHECK_EQ(again->removed, message->removed);
    HVD_CHECK(again->assignment == message->assignment);
    HVD_CHECK(again->reason == message->reason);
  }

  elastic::ReadyReport ready;
  if (elastic::DecodeReady(input, &ready)) {
    elastic::ReadyReport again;
    HVD_CHECK(elastic::DecodeReady(elastic::EncodeReady(ready), &again));
    HVD_CHECK(again == ready);
  } else {
    Note(&outcome, "not a ready report");
  }

  int64_t timestamp = 0;
  int flags = 0;
  Status update = elastic::DecodeHostUpdate(input, &timestamp, &flags);
  Note(&outcome, update);
  if (update.ok()) {
    int64_t timestamp2 = 0;
    int flags2 = 0;
    HVD_CHECK(
        elastic::DecodeHostUpdate(elastic::EncodeHostUpdate(timestamp, flags), &timestamp2, &flags2)
            .ok());
    HVD_CHECK_EQ(timestamp2, timestamp);
    HVD_CHECK_EQ(flags2, flags);
  }
  return outcome;
}

}  // namespace hvd::fuzz
