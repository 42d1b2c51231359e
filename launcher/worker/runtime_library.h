#ifndef HVD_LAUNCHER_WORKER_RUNTIME_LIBRARY_H_
#define HVD_LAUNCHER_WORKER_RUNTIME_LIBRARY_H_

#include <optional>
#include <string>

// Finds the libhvd that was built or installed alongside hvdrun, so every worker's Python
// binding loads the runtime that matches this launcher (DESIGN.md "Runtime loading").
namespace hvd::launcher {

// Absolute path of the running executable (/proc/self/exe), or "" when unreadable.
std::string SelfExecutablePath();

// Given hvdrun's absolute path, returns the first existing file of
//   <exe_dir>/../runtime/libhvd.so   (build tree: build/cmd/hvdrun)
//   <exe_dir>/../lib/libhvd.so       (installed: <prefix>/bin/hvdrun)
// canonicalised, or nullopt when neither exists.
std::optional<std::string> FindRuntimeLibrary(const std::string& exe_path);

// The folder holding the `hvd` Python package that goes with hvdrun at `exe_path`.
struct PythonPackage {
  std::string dir;          // canonical
  bool build_tree = false;  // <build>/python, which no interpreter searches by itself
};

// The first folder with an hvd/__init__.py of
//   <exe_dir>/../python                               (build tree)
//   <exe_dir>/../lib/python3*/{dist,site}-packages    (installed; HVD_PYTHON_INSTALL_DIR's default)
// or nullopt. For the failure hints (launcher/outcome/failure_hints.h).
std::optional<PythonPackage> FindPythonPackage(const std::string& exe_path);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_WORKER_RUNTIME_LIBRARY_H_
