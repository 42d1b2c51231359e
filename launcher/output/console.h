#ifndef HVD_LAUNCHER_OUTPUT_CONSOLE_H_
#define HVD_LAUNCHER_OUTPUT_CONSOLE_H_

#include <string_view>

// hvdrun's own user-facing messages on stderr ("hvdrun: ..."), each written whole, in order
// with the forwarded rank lines, and never waiting for a stalled reader (console_sink.h).
// Thread-safe.
namespace hvd::launcher {

// Always printed: errors and the failure summary.
void PrintToUser(std::string_view message);

// A launch step: printed with --verbose, else logged at INFO.
void PrintStep(bool verbose, std::string_view message);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_OUTPUT_CONSOLE_H_
