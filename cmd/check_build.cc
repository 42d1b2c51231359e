#include "cmd/check_build.h"

#ifndef HVD_VERSION
#define HVD_VERSION "unknown"
#endif
#ifndef HVD_BUILT_GLOO
#define HVD_BUILT_GLOO 0
#endif
#ifndef HVD_BUILT_MPI
#define HVD_BUILT_MPI 0
#endif
#ifndef HVD_BUILT_NCCL
#define HVD_BUILT_NCCL 0
#endif
#ifndef HVD_BUILT_PYTHON
#define HVD_BUILT_PYTHON 0
#endif

namespace hvd::cmd {
namespace {

std::string Box(bool built, const char* name) {
  return std::string("    [") + (built ? "X" : " ") + "] " + name + "\n";
}

}  // namespace

std::string CheckBuildText() {
  // Horovod's layout (horovod/runner/launch.py::check_build).
  return std::string("hvd v") + HVD_VERSION + ":\n\n" + "Available Frameworks:\n" +
         Box(false, "TensorFlow") + Box(HVD_BUILT_PYTHON, "PyTorch") + Box(false, "MXNet") + "\n" +
         "Available Controllers:\n" + Box(HVD_BUILT_MPI, "MPI") + Box(HVD_BUILT_GLOO, "Gloo") +
         "\n" + "Available Tensor Operations:\n" + Box(HVD_BUILT_NCCL, "NCCL") + Box(false, "DDL") +
         Box(false, "CCL") + Box(HVD_BUILT_MPI, "MPI") + Box(HVD_BUILT_GLOO, "Gloo");
}

std::string VersionText() { return std::string("hvdrun ") + HVD_VERSION + "\n"; }

}  // namespace hvd::cmd
