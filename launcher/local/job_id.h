#ifndef HVD_LAUNCHER_LOCAL_JOB_ID_H_
#define HVD_LAUNCHER_LOCAL_JOB_ID_H_

#include <string>

namespace hvd::launcher {

// A fresh job identifier: 16 hex digits from std::random_device. It namespaces the job's
// rendezvous keys and shared-memory segment names; it is not a secret (the job key is).
std::string NewJobId();

// The control plane's address when every rank runs on this machine.
inline constexpr const char* kLoopbackAddress = "127.0.0.1";

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_JOB_ID_H_
