#ifndef HVD_CMD_CHECK_BUILD_H_
#define HVD_CMD_CHECK_BUILD_H_

#include <string>

namespace hvd::cmd {

// What `hvdrun -cb` prints: horovodrun's --check-build boxes (frameworks, controllers, tensor
// operations) filled in from how this hvdrun was built. TensorFlow, MXNet, DDL and CCL are
// listed, unchecked, so scripts that grep Horovod's output keep working.
std::string CheckBuildText();

// What a build holds, for CheckBuildText: the defaults are this build's.
struct BuildFeatures {
  bool torch;  // hvd.torch built, for an interpreter that imports torch
  bool mpi;    // the MPI transport and controller
  bool gloo;   // the Gloo transport (libgloo); the Gloo controller (hvd's own rendezvous) is
               // in every build
  bool nccl;   // the NCCL backend
};
BuildFeatures ThisBuild();
std::string CheckBuildText(const BuildFeatures& features);

// What `hvdrun --version` prints: "hvdrun <version>\n".
std::string VersionText();

}  // namespace hvd::cmd

#endif  // HVD_CMD_CHECK_BUILD_H_
