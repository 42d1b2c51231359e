#include "launcher/output/console.h"

#include <errno.h>
#include <unistd.h>

#include <string>

#include "common/logging.h"

namespace hvd::launcher {

void PrintToUser(std::string_view message) {
  std::string text = "hvdrun: ";
  text.append(message);
  if (text.back() != '\n') text.push_back('\n');
  std::string_view rest = text;
  while (!rest.empty()) {
    ssize_t n = ::write(2, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    rest.remove_prefix(static_cast<size_t>(n));
  }
}

void PrintStep(bool verbose, std::string_view message) {
  if (verbose) {
    PrintToUser(message);
  } else {
    HVD_LOG_INFO("{}", message);
  }
}

}  // namespace hvd::launcher
