#ifndef HVD_COMMON_ELASTIC_MESSAGES_H_
#define HVD_COMMON_ELASTIC_MESSAGES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

// What hvdrun's elastic driver (launcher/elastic/elastic_driver.h) and an elastic worker's runtime
// (runtime/elastic_worker.h) say to each other, through the authenticated rendezvous server
// (common/kv_client.h), as keys of the job's namespace. Plain text values; nothing is
// deserialized into code.
//
//   elastic/mail/<worker>/<n>   driver -> worker: the n-th message (n = 1, 2, ...), an
//                               Assignment ("assign ...") or a removal ("removed <why>")
//   elastic/ready/<worker>      worker -> driver: "<n>" or "<n> <synced round>": the worker has
//                               read n messages, has no runtime running, and waits for message
//                               n + 1; the synced round (since 2026-11-27) is the last round in
//                               which it received (or held) the training state: hvd.elastic.run
//                               says so after state.sync(). Only such workers can hand the state
//                               on once one has said it
//   elastic/hosts               driver -> workers: "<timestamp> <flags>", the latest host
//                               change (flags: 1 hosts removed, 2 hosts added, 3 both)
//
// A worker's first init and every re-init after hvd.shutdown() report ready and wait for the
// next message; the driver answers once the round's members are known. Each round's
// collective rendezvous runs under the key prefix "<round>/"; the driver aborts that prefix
// on the server when it gives up on a round that never formed, so its members fail fast and
// read their next message.
namespace hvd::control::elastic {

// A worker's place in one round.
struct Assignment {
  int64_t round = 0;
  int32_t rank = 0, size = 1, local_rank = 0, local_size = 1, cross_rank = 0, cross_size = 1;
  // Some member of this round was in no earlier round: every member must sync the state from
  // rank 0 (even survivors of a removal, who would skip it otherwise; Horovod #3494).
  bool joined = false;
  // The driver's latest host-change timestamp when the round was made: changes up to it are
  // already reflected in the round, so check_host_updates() only reacts to later ones.
  int64_t hosts_timestamp = 0;
  std::string host;

  bool operator==(const Assignment&) const = default;
};

struct Message {
  bool removed = false;
  Assignment assignment;  // when !removed
  std::string reason;     // when removed
};

inline constexpr int kHostsRemoved = 1;
inline constexpr int kHostsAdded = 2;

std::string MailKey(int64_t worker, int64_t n);
std::string ReadyKey(int64_t worker);
inline constexpr char kReadyPrefix[] = "elastic/ready/";
inline constexpr char kHostsKey[] = "elastic/hosts";
// The key prefix of round `round`'s collective rendezvous ("<round>/").
std::string RoundPrefix(int64_t round);

std::string EncodeMessage(const Message& message);
// InvalidArgument quoting the text when it is not a message this version writes.
Result<Message> DecodeMessage(std::string_view text);

// A worker's ready report: it read `cursor` messages and waits for the next.
struct ReadyReport {
  int64_t cursor = 0;
  // The last round in which it held the training state (hvd.elastic.run's sync); 0: none.
  int64_t synced_round = 0;
  // The round it was assigned and could not join (its init failed there for a reason of its
  // own, not because the driver gave the round up); 0: none. The driver then gives that round
  // up at once, so its other members stop waiting in its rendezvous (since 2026-12-01).
  int64_t failed_round = 0;
  bool operator==(const ReadyReport&) const = default;
};

// "<cursor>", "<cursor> <synced round>" (synced round > 0) or "<cursor> <synced round> <failed
// round>" (failed round > 0, synced round >= 0).
std::string EncodeReady(const ReadyReport& report);
// False for anything else (every number non-negative).
bool DecodeReady(std::string_view text, ReadyReport* report);

std::string EncodeHostUpdate(int64_t timestamp, int flags);
Status DecodeHostUpdate(std::string_view text, int64_t* timestamp, int* flags);

}  // namespace hvd::control::elastic

#endif  // HVD_COMMON_ELASTIC_MESSAGES_H_
