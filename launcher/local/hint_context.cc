#include "launcher/local/hint_context.h"

#include <filesystem>
#include <system_error>

#include "launcher/local/exec_search.h"
#include "launcher/worker/runtime_library.h"
#include "launcher/worker/worker_env.h"

namespace hvd::launcher {
namespace {

constexpr const char* kSystemPython = "/usr/bin/python3";
constexpr const char* kSystemPackages = "/usr/lib/python3/dist-packages";

}  // namespace

HintContext LocalHintContext(const std::string& program,
                             const std::map<std::string, std::string>& env) {
  namespace fs = std::filesystem;
  HintContext context;
  context.program = program;
  context.program_path = FindExecutable(program, env).value_or("");
  std::error_code ec;
  if (!context.program_path.empty()) {
    const fs::path system = fs::canonical(kSystemPython, ec);
    context.program_is_system_python =
        !ec && fs::canonical(context.program_path, ec) == system && !ec;
  }
  if (std::optional<PythonPackage> package = FindPythonPackage(SelfExecutablePath())) {
    context.package_dir = package->dir;
    context.package_dir_is_build_tree = package->build_tree;
  }
  context.system_python_has = [](const std::string& module) {
    std::error_code error;
    const fs::path packages(kSystemPackages);
    return fs::exists(kSystemPython, error) &&
           (fs::is_directory(packages / module, error) ||
            fs::is_regular_file(packages / (module + ".py"), error));
  };
  context.users_master_port = UsersMasterSetting(env, "MASTER_PORT").value_or("");
  return context;
}

}  // namespace hvd::launcher
