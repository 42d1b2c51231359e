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

BuildFeatures ThisBuild() {
  return {HVD_BUILT_PYTHON != 0, HVD_BUILT_MPI != 0, HVD_BUILT_GLOO != 0, HVD_BUILT_NCCL != 0};
}

std::string CheckBuildText() { return CheckBuildText(ThisBuild()); }

std::string CheckBuildText(const BuildFeatures& f) {
  // Horovod's layout (horovod/runner/launch.py::check_build). The Gloo controller is hvd's own
  // rendezvous (hvdrun's server), in every build: jobs run on it with or without libgloo.
  return std::string("hvd v") + HVD_VERSION + ":\n\n" + "Available Frameworks:\n" +
         Box(false, "TensorFlow") + Box(f.torch, "PyTorch") + Box(false, "MXNet") + "\n" +
         "Available Controllers:\n" + Box(f.mpi, "MPI") + Box(true, "Gloo") + "\n" +
         "Available Tensor Operations:\n" + Box(f.nccl, "NCCL") + Box(false, "DDL") +
         Box(false, "CCL") + Box(f.mpi, "MPI") + Box(f.gloo, "Gloo");
}

std::string VersionText() { return std::string("hvdrun ") + HVD_VERSION + "\n"; }

}  // namespace hvd::cmd
