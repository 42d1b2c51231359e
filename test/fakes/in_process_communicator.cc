#include "test/fakes/in_process_communicator.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/check.h"
#include "runtime/transports/hierarchical_communicator.h"
#include "runtime/transports/host_layout.h"
#include "runtime/transports/reduction.h"

namespace hvd::testing {

struct InProcessWorld::Group {
  struct Round {
    std::shared_ptr<std::vector<std::string>> data;  // every member's contribution
    int arrived = 0;
    int read = 0;
  };
  explicit Group(int n) : size(n) {}

  std::mutex mu;
  std::condition_variable cv;
  const int size;
  bool aborted = false;
  std::map<uint64_t, Round> rounds;
  std::atomic<int64_t> calls{0};
  std::function<void(int rank, std::string* bytes)> tamper_gather;  // TamperGatherBytes
};

namespace {

using runtime::DataType;
using runtime::ReduceOp;

// Every member's contribution to one call, shared by the members: read-only once the last one
// arrived, so a member reads them without the group's lock and a big allreduce's buffers are
// not copied once per member (they were: runtime_test's two hierarchy checks of 2.5 MB pieces
// took 18 s with those copies, 5.5 s without; under ASan 90 s, 56 s).
class Contributions {
 public:
  explicit Contributions(std::shared_ptr<const std::vector<std::string>> data)
      : data_(std::move(data)) {}
  const std::string& operator[](size_t rank) const { return (*data_)[rank]; }
  std::vector<std::string> Copy() const { return *data_; }

 private:
  std::shared_ptr<const std::vector<std::string>> data_;
};

class InProcessCommunicator : public runtime::Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<InProcessWorld::Group> group, int rank,
                        std::chrono::milliseconds timeout, InProcessWorld::Capabilities caps)
      : group_(std::move(group)),
        rank_(rank),
        timeout_(timeout),
        ands_with_allreduce_(caps.ands_with_allreduce),
        allreduces_pieces_(caps.allreduces_pieces) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size; }
  const char* name() const override { return "FAKE"; }

  Status GatherBytes(const std::string& in, int root, std::vector<std::string>* out) override {
    std::string tampered;
    if (group_->tamper_gather) group_->tamper_gather(rank_, &(tampered = in));
    HVD_ASSIGN_OR_RETURN(auto all, Exchange(group_->tamper_gather ? tampered : in, "GatherBytes"));
    if (rank_ == root) *out = all.Copy();
    return Status::OK();
  }
  Status BroadcastBytes(std::string* data, int root) override {
    HVD_ASSIGN_OR_RETURN(auto all, Exchange(rank_ == root ? *data : "", "BroadcastBytes"));
    *data = all[root];
    return Status::OK();
  }
  Status BitwiseAnd(std::vector<uint64_t>* bits) override { return Bitwise(bits, true); }
  Status BitwiseOr(std::vector<uint64_t>* bits) override { return Bitwise(bits, false); }
  Status Barrier() override { return Exchange("", "Barrier").status(); }
  bool ands_with_allreduce() const override { return ands_with_allreduce_; }
  // Both reduce in rank order from member 0's input.
  bool rides_allreduce_as_own(int64_t, DataType) const override { return ands_with_allreduce_; }
  bool allreduces_pieces() const override { return allreduces_pieces_; }
  Status BitwiseAndWithAllreduce(std::span<uint64_t> words, size_t and_words, int64_t count,
                                 DataType dtype, ReduceOp op) override {
    if (!ands_with_allreduce_) {
      return Communicator::BitwiseAndWithAllreduce(words, and_words, count, dtype, op);
    }
    if (and_words * 8 + static_cast<size_t>(count) * runtime::DataTypeSize(dtype) >
        words.size() * 8) {
      return Status::InvalidArgument("FAKE BitwiseAndWithAllreduce: the words are too short");
    }
    HVD_ASSIGN_OR_RETURN(
        auto all, Exchange(std::string(reinterpret_cast<char*>(words.data()), words.size() * 8),
                           "BitwiseAndWithAllreduce"));
    // In rank order from member 0's words, so every member computes the same bits.
    std::memcpy(words.data(), all[0].data(), words.size() * 8);
    for (int r = 1; r < size(); ++r) {
      if (all[r].size() != words.size() * 8) return Status::Internal("words differ in length");
      const auto* other = reinterpret_cast<const uint64_t*>(all[r].data());
      for (size_t i = 0; i < and_words; ++i) words[i] &= other[i];
      runtime::ReduceInto(words.data() + and_words, other + and_words, count, dtype, op);
    }
    return Status::OK();
  }

  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) override {
    const size_t bytes = static_cast<size_t>(count) * runtime::DataTypeSize(dtype);
    HVD_ASSIGN_OR_RETURN(auto all,
                         Exchange(std::string(static_cast<char*>(buffer), bytes), "Allreduce"));
    // Reduce in rank order so every member computes bit-identical results.
    std::memcpy(buffer, all[0].data(), bytes);
    for (int r = 1; r < size(); ++r) runtime::ReduceInto(buffer, all[r].data(), count, dtype, op);
    return Status::OK();
  }
  Status Allgatherv(const void* in, void* out,
                    const std::vector<int64_t>& bytes_per_rank) override {
    HVD_ASSIGN_OR_RETURN(
        auto all, Exchange(std::string(static_cast<const char*>(in), bytes_per_rank.at(rank_)),
                           "Allgatherv"));
    char* dst = static_cast<char*>(out);
    for (int r = 0; r < size(); ++r) {
      if (static_cast<int64_t>(all[r].size()) != bytes_per_rank[r]) {
        return Status::Internal("Allgatherv: rank " + std::to_string(r) + " sent " +
                                std::to_string(all[r].size()) + " bytes, expected " +
                                std::to_string(bytes_per_rank[r]));
      }
      if (!all[r].empty()) std::memcpy(dst, all[r].data(), all[r].size());
      dst += all[r].size();
    }
    return Status::OK();
  }
  Status Broadcast(void* buffer, int64_t bytes, int root) override {
    std::string mine = rank_ == root ? std::string(static_cast<char*>(buffer), bytes) : "";
    HVD_ASSIGN_OR_RETURN(auto all, Exchange(mine, "Broadcast"));
    if (rank_ != root) std::memcpy(buffer, all[root].data(), bytes);
    return Status::OK();
  }
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override {
    // Contribution: the size() send counts, then the payload.
    std::string mine(reinterpret_cast<const char*>(send_bytes.data()),
                     send_bytes.size() * sizeof(int64_t));
    int64_t total = 0;
    for (int64_t b : send_bytes) total += b;
    if (total > 0) mine.append(static_cast<const char*>(in), total);
    HVD_ASSIGN_OR_RETURN(auto all, Exchange(mine, "Alltoallv"));
    char* dst = static_cast<char*>(out);
    for (int r = 0; r < size(); ++r) {
      const int64_t* counts = reinterpret_cast<const int64_t*>(all[r].data());
      int64_t offset = size() * static_cast<int64_t>(sizeof(int64_t));
      for (int k = 0; k < rank_; ++k) offset += counts[k];
      if (counts[rank_] != recv_bytes.at(r)) {
        return Status::Internal("Alltoallv: rank " + std::to_string(r) + " sends " +
                                std::to_string(counts[rank_]) + " bytes, expected " +
                                std::to_string(recv_bytes[r]));
      }
      if (counts[rank_] > 0) std::memcpy(dst, all[r].data() + offset, counts[rank_]);
      dst += counts[rank_];
    }
    return Status::OK();
  }
  void Abort() override {
    std::lock_guard<std::mutex> lock(group_->mu);
    group_->aborted = true;
    group_->cv.notify_all();
  }

 private:
  Status Bitwise(std::vector<uint64_t>* bits, bool conjunction) {
    std::string mine(reinterpret_cast<const char*>(bits->data()), bits->size() * 8);
    HVD_ASSIGN_OR_RETURN(auto all, Exchange(mine, conjunction ? "BitwiseAnd" : "BitwiseOr"));
    for (int r = 0; r < size(); ++r) {
      if (all[r].size() != mine.size()) return Status::Internal("bit vectors differ in length");
      const uint64_t* other = reinterpret_cast<const uint64_t*>(all[r].data());
      for (size_t i = 0; i < bits->size(); ++i) {
        (*bits)[i] = conjunction ? ((*bits)[i] & other[i]) : ((*bits)[i] | other[i]);
      }
    }
    return Status::OK();
  }

  // Deposits this member's contribution to its next call and returns every member's.
  Result<Contributions> Exchange(std::string in, const char* op) {
    const uint64_t seq = seq_++;
    ++group_->calls;
    std::unique_lock<std::mutex> lock(group_->mu);
    if (group_->aborted) return Status::Aborted(std::string("FAKE ") + op + ": aborted");
    auto& round = group_->rounds[seq];
    if (!round.data) round.data = std::make_shared<std::vector<std::string>>(group_->size);
    (*round.data)[rank_] = std::move(in);
    ++round.arrived;
    group_->cv.notify_all();
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    bool ok = group_->cv.wait_until(lock, deadline, [&] {
      return group_->aborted || group_->rounds[seq].arrived == group_->size;
    });
    if (group_->aborted) return Status::Aborted(std::string("FAKE ") + op + ": aborted");
    if (!ok) {
      return Status::Timeout(std::string("FAKE ") + op + ": rank " + std::to_string(rank_) +
                             " timed out waiting for " +
                             std::to_string(group_->size - group_->rounds[seq].arrived) +
                             " other rank(s)");
    }
    auto& done = group_->rounds[seq];
    Contributions out(done.data);
    if (++done.read == group_->size) group_->rounds.erase(seq);
    return out;
  }

  std::shared_ptr<InProcessWorld::Group> group_;
  const int rank_;
  const std::chrono::milliseconds timeout_;
  const bool ands_with_allreduce_;
  const bool allreduces_pieces_;
  uint64_t seq_ = 0;  // this member's next call (used by its one calling thread)
};

class InProcessProvider : public runtime::CommunicatorProvider {
 public:
  InProcessProvider(InProcessWorld* world, bool hierarchy) : world_(world), hierarchy_(hierarchy) {}
  Result<std::unique_ptr<runtime::Communicator>> Create(const runtime::GroupSpec& spec) override {
    const int size = static_cast<int>(spec.ranks.size());
    const int per_host = world_->ranks_per_host();
    if (!hierarchy_ || per_host <= 0) return world_->Join(spec.scope, spec.rank_in_group, size);
    std::vector<std::string> host_of;
    for (int32_t r : spec.ranks) host_of.push_back("h" + std::to_string(r / per_host));
    const runtime::HostLayout l = runtime::ComputeHostLayout(host_of, spec.rank_in_group);
    if (!l.uniform || l.hosts < 2 || l.local_size < 2) {
      return world_->Join(spec.scope, spec.rank_in_group, size);
    }
    return runtime::MakeHierarchicalCommunicator(
        world_->Join(spec.scope, spec.rank_in_group, size),
        world_->Join(spec.scope + "/local" + std::to_string(l.host_index), l.local_rank,
                     l.local_size),
        world_->Join(spec.scope + "/cross" + std::to_string(l.local_rank), l.host_index, l.hosts,
                     {.ands_with_allreduce = true}),
        runtime::HierarchicalOps{});
  }
  uint32_t enabled_flags() const override { return 0; }

 private:
  InProcessWorld* world_;
  bool hierarchy_;
};

}  // namespace

InProcessWorld::InProcessWorld(std::chrono::milliseconds timeout) : timeout_(timeout) {}

std::unique_ptr<runtime::Communicator> InProcessWorld::Join(const std::string& scope, int rank,
                                                            int size, Capabilities caps) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& group = groups_[scope];
  if (!group) {
    group = std::make_shared<Group>(size);
    group->aborted = aborted_;
    group->tamper_gather = tamper_gather_;
  }
  HVD_CHECK_EQ(group->size, size) << "group " << scope << " joined with different sizes";
  return std::make_unique<InProcessCommunicator>(group, rank, timeout_, caps);
}

void InProcessWorld::AbortAll() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  for (auto& [scope, group] : groups_) {
    std::lock_guard<std::mutex> group_lock(group->mu);
    group->aborted = true;
    group->cv.notify_all();
  }
}

runtime::ProviderFactory InProcessWorld::Factory() {
  return [this](const runtime::RuntimeConfig& config)
             -> Result<std::unique_ptr<runtime::CommunicatorProvider>> {
    return std::unique_ptr<runtime::CommunicatorProvider>(
        new InProcessProvider(this, config.hierarchical_allreduce != "off"));
  };
}

int64_t InProcessWorld::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  for (const auto& [scope, group] : groups_) n += group->calls;
  return n;
}

int64_t InProcessWorld::calls(const std::string& scope) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = groups_.find(scope);
  return it == groups_.end() ? 0 : it->second->calls.load();
}

}  // namespace hvd::testing
