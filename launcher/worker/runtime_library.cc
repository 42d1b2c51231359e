#include "launcher/worker/runtime_library.h"

#include <filesystem>
#include <system_error>

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

}  // namespace hvd::launcher
