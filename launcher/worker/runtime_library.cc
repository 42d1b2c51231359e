#include "launcher/worker/runtime_library.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <vector>

namespace hvd::launcher {

std::string SelfExecutablePath() {
  std::error_code ec;
  std::filesystem::path path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : path.string();
}

std::optional<std::string> FindRuntimeLibrary(const std::string& exe_path) {
  if (exe_path.empty()) return std::nullopt;
  std::filesystem::path dir = std::filesystem::path(exe_path).parent_path();
  for (const char* relative : {"../runtime/libhvd.so", "../lib/libhvd.so"}) {
    std::error_code ec;
    std::filesystem::path candidate = dir / relative;
    if (!std::filesystem::is_regular_file(candidate, ec)) continue;
    std::filesystem::path canonical = std::filesystem::canonical(candidate, ec);
    if (!ec) return canonical.string();
  }
  return std::nullopt;
}

std::optional<PythonPackage> FindPythonPackage(const std::string& exe_path) {
  if (exe_path.empty()) return std::nullopt;
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(exe_path).parent_path();
  std::error_code ec;
  auto holds_hvd = [&](const fs::path& folder) {
    return fs::is_regular_file(folder / "hvd" / "__init__.py", ec);
  };
  if (holds_hvd(dir / ".." / "python")) {
    return PythonPackage{fs::canonical(dir / ".." / "python", ec).string(), true};
  }
  std::vector<fs::path> installed;  // lib/python3.11/dist-packages, ...
  for (fs::directory_iterator it(dir / ".." / "lib", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind("python3", 0) != 0) continue;
    for (const char* packages : {"dist-packages", "site-packages"}) {
      if (holds_hvd(it->path() / packages)) installed.push_back(it->path() / packages);
    }
  }
  if (installed.empty()) return std::nullopt;
  std::sort(installed.begin(), installed.end());
  return PythonPackage{fs::canonical(installed.front(), ec).string(), false};
}

}  // namespace hvd::launcher
