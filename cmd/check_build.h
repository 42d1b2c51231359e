#ifndef HVD_CMD_CHECK_BUILD_H_
#define HVD_CMD_CHECK_BUILD_H_

#include <string>

namespace hvd::cmd {

// What `hvdrun -cb` prints: horovodrun's --check-build boxes (frameworks, controllers, tensor
// operations) filled in from how this hvdrun was built. TensorFlow, MXNet, DDL and CCL are
// listed, unchecked, so scripts that grep Horovod's output keep working.
std::string CheckBuildText();

// What `hvdrun --version` prints: "hvdrun <version>\n".
std::string VersionText();

}  // namespace hvd::cmd

#endif  // HVD_CMD_CHECK_BUILD_H_
