#ifndef HVD_TEST_FAKES_IN_PROCESS_COMMUNICATOR_H_
#define HVD_TEST_FAKES_IN_PROCESS_COMMUNICATOR_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/transports/backend_registry.h"
#include "runtime/transports/communicator.h"

namespace hvd::testing {

// What a member of an InProcessWorld group does beyond the required collectives (the same for
// every member of a group).
struct InProcessCapabilities {
  // Runs the eager round's BitwiseAndWithAllreduce, as hvd's TCP transport does.
  bool ands_with_allreduce = false;
  // Says allreduces_pieces(), as shared memory does (the pieces collectives are the
  // Communicator's packing defaults).
  bool allreduces_pieces = false;
};

// InProcessWorld is a real in-memory transport for ranks that are threads of one process.
// A group (one scope, e.g. "1/global") is shared state guarded by a mutex; every collective
// is an exchange: each member deposits its contribution for its n-th call, waits on a
// condition variable until all members have, then computes its result locally. Every wait
// has the world's deadline (kTimeout naming the op and the missing ranks), and AbortAll() /
// any member's Abort() fails pending and future calls of the group with kAborted.
// Thread-safe.
class InProcessWorld {
 public:
  explicit InProcessWorld(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  using Capabilities = InProcessCapabilities;
  // Member `rank` of the `size`-member group named `scope` (created on first use).
  std::unique_ptr<runtime::Communicator> Join(const std::string& scope, int rank, int size,
                                              Capabilities caps = {});
  // Aborts every group created so far and any created later.
  void AbortAll();
  // A factory for runtime::Runtime: communicators of this world (ignores the config's
  // rendezvous settings).
  runtime::ProviderFactory Factory();
  // From now on the factory's ranks run `ranks_per_host` to a "host" (rank r on host
  // r / ranks_per_host), and a group spread evenly over 2+ hosts with 2+ members on each gets a
  // hierarchical communicator (hierarchical_communicator.h) unless the config's
  // hierarchical_allreduce is "off", as ShmProvider makes one: flat, local and cross groups of
  // this world named like its own. 0 (the default): one host.
  void SetRanksPerHost(int ranks_per_host) { ranks_per_host_ = ranks_per_host; }
  // Groups created from now on pass each member's GatherBytes input through `tamper` first (a
  // data connection altered on its way: the member's rank and its bytes).
  void TamperGatherBytes(std::function<void(int rank, std::string* bytes)> tamper) {
    std::lock_guard<std::mutex> lock(mu_);
    tamper_gather_ = std::move(tamper);
  }
  int ranks_per_host() const { return ranks_per_host_; }
  // Number of collective calls made so far across all groups (lockstep checks), or by the
  // members of the group named `scope` (0 when there is none).
  int64_t calls() const;
  int64_t calls(const std::string& scope) const;

  struct Group;

 private:
  std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Group>> groups_;
  bool aborted_ = false;
  int ranks_per_host_ = 0;
  std::function<void(int rank, std::string* bytes)> tamper_gather_;
};

}  // namespace hvd::testing

#endif  // HVD_TEST_FAKES_IN_PROCESS_COMMUNICATOR_H_
