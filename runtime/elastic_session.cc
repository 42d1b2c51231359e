#include "runtime/elastic_session.h"

#include "common/job_key.h"
#include "common/logging.h"

namespace hvd::runtime {
namespace {

namespace elastic = control::elastic;

// Consecutive rounds a worker may fail to form for reasons other than the driver giving up
// on them, before Init reports the error (the driver counts each round as a reset, so
// --reset-limit bounds this too).
constexpr int kMaxFormationFailures = 3;

// How long a worker whose init failed in a way a peer may have caused waits for the driver to
// give the round up (ElasticSession::Init).
constexpr std::chrono::seconds kPeerReportWait{2};

// A worker waiting for the driver's next message asks the server again this often.
constexpr std::chrono::seconds kMailboxWaitSlice{30};

RuntimeConfig Apply(const RuntimeConfig& base, const elastic::Assignment& a) {
  RuntimeConfig config = base;
  config.rank = a.rank;
  config.size = a.size;
  config.local_rank = a.local_rank;
  config.local_size = a.local_size;
  config.cross_rank = a.cross_rank;
  config.cross_size = a.cross_size;
  config.rendezvous_round = a.round;
  return config;
}

std::string WorkerName(const RuntimeConfig& config) {
  return config.hostname + " [worker " + std::to_string(config.elastic_worker_id) + "]";
}

}  // namespace

bool IsElasticWorker(const RuntimeConfig& config) {
  return config.elastic && config.elastic_worker_id >= 0 && !config.rendezvous_addr.empty();
}

Result<elastic::Message> ElasticSession::NextMessageLocked(const RuntimeConfig& base) {
  if (!kv_) {
    if (base.secret_fd < 0) {
      return Status::InvalidArgument(
          "HVD_SECRET_FD is not set: elastic workers are started by "
          "hvdrun, which passes the job key");
    }
    HVD_ASSIGN_OR_RETURN(control::JobKey key, control::ReadKeyFromFd(base.secret_fd));
    auto kv = control::KvClient::Connect(base.rendezvous_addr,
                                         static_cast<uint16_t>(base.rendezvous_port), key,
                                         base.job_id, base.timeout);
    if (!kv.ok()) return kv.status().WithContext("connecting to hvdrun's elastic driver");
    kv_ = std::move(kv).value();
  }
  const int64_t id = base.elastic_worker_id;
  HVD_RETURN_IF_ERROR(
      kv_->Set(elastic::ReadyKey(id), elastic::EncodeReady({cursor_, synced_round_, failed_round_}))
          .WithContext("reporting to hvdrun's elastic driver"));
  failed_round_ = 0;
  // No bound of its own: hvdrun's driver decides how long a worker waits (it sends the next
  // round, a removal, or ends the job and stops the worker), and that can be long by design: a
  // new worker starts at once and waits for the members' next commit, which may come once an
  // epoch; a survivor at a reset waits for a slow member (rank 0 writing a checkpoint). Until
  // 2026-12-01 the wait ended after HVD_ELASTIC_TIMEOUT plus a minute, and the worker's exit 1
  // then got its healthy host blacklisted. The server answers each slice's wait, which shows
  // hvdrun is alive; a lost hvdrun breaks the connection or leaves the answer out, and either
  // ends the wait with the transport's error.
  const std::string key = elastic::MailKey(id, cursor_ + 1);
  Result<std::string> text = kv_->Wait(key, kMailboxWaitSlice);
  while (!text.ok() && text.status().code() == StatusCode::kTimeout) {
    // The server's "not yet" leaves the connection usable; a transport timeout does not, and
    // then this Get fails at once with that error, which ends the loop.
    text = kv_->Get(key);
    if (text.ok() || text.status().code() != StatusCode::kNotFound) break;
    text = kv_->Wait(key, kMailboxWaitSlice);
  }
  if (!text.ok()) {
    return text.status().WithContext(WorkerName(base) +
                                     ": waiting for a rank from hvdrun's elastic driver");
  }
  ++cursor_;
  return elastic::DecodeMessage(*text);
}

bool ElasticSession::RoundGivenUp(int64_t round, std::chrono::milliseconds wait) {
  // Any request under a given-up round's keys answers kAborted (RendezvousServer::AbortPrefix),
  // a wait parked there too when the round is given up meanwhile; the key itself is never set.
  Result<std::string> probe = kv_->Wait(elastic::RoundPrefix(round) + "given-up?", wait);
  return probe.status().code() == StatusCode::kAborted;
}

Status ElasticSession::Init(Runtime& runtime, const RuntimeConfig& base,
                            const std::vector<std::vector<int32_t>>& process_sets) {
  std::lock_guard<std::mutex> lock(mu_);
  if (runtime.initialized()) return Status::OK();
  int failures = 0;
  while (true) {
    HVD_ASSIGN_OR_RETURN(elastic::Message message, NextMessageLocked(base));
    if (message.removed) {
      current_.reset();
      return Status::Aborted(WorkerName(base) +
                             " has been removed from the elastic job: " + message.reason);
    }
    const elastic::Assignment& a = message.assignment;
    Status s = runtime.Init(Apply(base, a), process_sets);
    if (s.ok()) {
      current_ = a;
      HVD_LOG_DEBUG("elastic round {}: rank {} of {}", a.round, a.rank, a.size);
      return s;
    }
    // A failure that may come from a peer (a connection closed or refused, a timeout: not a
    // setting of this worker's own, which is InvalidArgument) waits briefly for the driver to
    // give the round up on the failing peer's report; the peer's own failure reports at once.
    // Given up: not a try of this worker's own.
    const auto wait =
        s.code() == StatusCode::kInvalidArgument ? std::chrono::milliseconds(0) : kPeerReportWait;
    if (s.code() != StatusCode::kAborted && RoundGivenUp(a.round, wait)) {
      s = Status::Aborted(s.message());
    }
    if (s.code() != StatusCode::kAborted) {
      if (++failures >= kMaxFormationFailures) {
        return s.WithContext("elastic round " + std::to_string(a.round));
      }
      failed_round_ = a.round;  // the next report says so: the driver gives the round up
    }
    HVD_LOG_WARNING("elastic round {} did not form ({}); waiting for the next one", a.round,
                    s.message());
  }
}

Result<elastic::Assignment> ElasticSession::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!current_) return Status::PreconditionFailed("not in an elastic round");
  return *current_;
}

Status ElasticSession::MarkSynced() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!current_) return Status::PreconditionFailed("not in an elastic round");
  synced_round_ = current_->round;
  return Status::OK();
}

Status ElasticSession::HostUpdate(int64_t* timestamp, int* flags) {
  std::unique_ptr<control::KvClient>* kv;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!kv_) return Status::PreconditionFailed("not an elastic worker, or not initialized");
    kv = &kv_;
  }
  *timestamp = 0;
  *flags = 0;
  Result<std::string> text = (*kv)->Get(control::elastic::kHostsKey);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return Status::OK();
    return text.status().WithContext("asking hvdrun's elastic driver for host updates");
  }
  return control::elastic::DecodeHostUpdate(*text, timestamp, flags);
}

}  // namespace hvd::runtime
