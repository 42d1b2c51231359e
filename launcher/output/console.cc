#include "launcher/output/console.h"

#include <string>
#include <utility>

#include "common/logging.h"
#include "launcher/output/console_sink.h"

namespace hvd::launcher {

void PrintToUser(std::string_view message) {
  std::string text = "hvdrun: ";
  text.append(message);
  if (text.back() != '\n') text.push_back('\n');
  ConsoleWrite(2, std::move(text));
}

void PrintStep(bool verbose, std::string_view message) {
  if (verbose) {
    PrintToUser(message);
  } else {
    HVD_LOG_INFO("{}", message);
  }
}

}  // namespace hvd::launcher
