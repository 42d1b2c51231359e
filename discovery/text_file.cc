#include "discovery/text_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace hvd::discovery {
namespace {

// Host lists are small; a larger file is almost certainly the wrong path.
constexpr size_t kMaxFileBytes = 64 << 20;

Status ReadError(std::string_view what, const std::string& path, const std::string& reason) {
  return Status::IoError("cannot read " + std::string(what) + " '" + path + "': " + reason);
}

}  // namespace

Result<std::string> ReadTextFile(const std::string& path, std::string_view what) {
  if (path.empty()) return ReadError(what, path, "empty path");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (file == nullptr) return ReadError(what, path, std::strerror(errno));
  std::string content;
  char buffer[8192];
  while (true) {
    size_t n = std::fread(buffer, 1, sizeof(buffer), file.get());
    content.append(buffer, n);
    if (content.size() > kMaxFileBytes) return ReadError(what, path, "larger than 64 MiB");
    if (n < sizeof(buffer)) break;
  }
  if (std::ferror(file.get())) return ReadError(what, path, std::strerror(errno));
  return content;
}

}  // namespace hvd::discovery
