#ifndef HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COLLECTIVE_STORE_H_
#define HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COLLECTIVE_STORE_H_

#include <gloo/rendezvous/store.h>

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/transports/communicator.h"

namespace hvd::runtime {

// GlooCollectiveStore is a gloo::rendezvous::Store with no server: set() is a collective over
// an already connected Communicator of the same group (in hvd, the MPI one), after which every
// member holds every member's key. It fits gloo's connectFullMesh, in which each rank sets its
// own key exactly once and then reads the others'; so every member must call set() the same
// number of times, before any get() / wait() of another rank's key. A missing key is an
// error, never a wait. Failures throw gloo::IoException (gloo's contract) and are kept in
// first_error(). Not thread-safe; one connectFullMesh at a time.
class GlooCollectiveStore : public gloo::rendezvous::Store {
 public:
  explicit GlooCollectiveStore(Communicator* comm) : comm_(comm) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  Status first_error() const { return first_error_; }

 private:
  [[noreturn]] void Fail(Status status);

  Communicator* const comm_;
  std::map<std::string, std::vector<char>> values_;
  Status first_error_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COLLECTIVE_STORE_H_
