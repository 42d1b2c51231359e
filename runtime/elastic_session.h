#ifndef HVD_RUNTIME_ELASTIC_SESSION_H_
#define HVD_RUNTIME_ELASTIC_SESSION_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/elastic_messages.h"
#include "common/kv_client.h"
#include "common/status.h"
#include "runtime/core/runtime.h"
#include "runtime/runtime_config.h"

namespace hvd::runtime {

// True for a worker started by hvdrun's elastic driver (HVD_ELASTIC=1 and a worker id).
bool IsElasticWorker(const RuntimeConfig& config);

// An elastic worker's side of hvdrun's elastic driver (protocol: common/elastic_messages.h).
// It keeps one authenticated connection to the rendezvous server and the worker's mailbox
// cursor across inits, so hvd.shutdown(); hvd.init() in one process joins the next round:
// every Init reports the worker ready, waits for the driver's next message and initializes
// `runtime` with the rank, size and round it names. A round that is given up on before it
// formed (a member died during the rendezvous; the driver aborts its keys) just leads to the
// next message. A removal ends Init with "<host> [worker N] has been removed from the elastic
// job: <why>".
//
// The C API holds one for its default runtime. Thread-safe (one mutex; Init blocks until the
// driver answers, with no bound of its own: the driver stops the workers when it gives up, and a
// lost hvdrun ends the wait with the connection's error).
class ElasticSession {
 public:
  Status Init(Runtime& runtime, const RuntimeConfig& base,
              const std::vector<std::vector<int32_t>>& process_sets);
  // The round of the last successful Init; PreconditionFailed before one.
  Result<control::elastic::Assignment> current() const;
  // The driver's latest host change (timestamp 0 = none so far): one request to hvdrun.
  Status HostUpdate(int64_t* timestamp, int* flags);
  // This worker now holds the training state of its current round (hvd.elastic.run calls it
  // once state.sync() succeeded); the next ready report tells the driver, which then counts
  // only such workers as able to hand the state on. PreconditionFailed outside a round.
  Status MarkSynced();

 private:
  Result<control::elastic::Message> NextMessageLocked(const RuntimeConfig& base);
  // Whether hvdrun's driver gave round `round` up (its rendezvous keys answer kAborted), waiting
  // up to `wait` for it to.
  bool RoundGivenUp(int64_t round, std::chrono::milliseconds wait);

  mutable std::mutex mu_;
  std::unique_ptr<control::KvClient> kv_;
  int64_t cursor_ = 0;        // messages read from the mailbox
  int64_t synced_round_ = 0;  // the last round in which MarkSynced was called; 0: none
  int64_t failed_round_ = 0;  // a round this worker could not join, for its next report
  std::optional<control::elastic::Assignment> current_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_ELASTIC_SESSION_H_
