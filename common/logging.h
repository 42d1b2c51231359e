#ifndef HVD_COMMON_LOGGING_H_
#define HVD_COMMON_LOGGING_H_

#include <spdlog/spdlog.h>

#include <string>
#include <string_view>

#include "common/status.h"

// Logging facade over spdlog. One process-wide logger (stderr); the launcher and the runtime
// configure it once at start-up from --log-level / HVD_LOG_LEVEL and HVD_LOG_HIDE_TIME.
// Thread-safe. Use the HVD_LOG_* macros: they take fmt-style format strings.
namespace hvd::log {

enum class Level { kTrace, kDebug, kInfo, kWarning, kError, kFatal };

// Accepts trace/debug/info/warning/warn/error/fatal in any case; anything else is an error
// that quotes the input.
Result<Level> ParseLevel(std::string_view text);
const char* LevelName(Level level);

// `tag` names the emitting process in every line (for example "hvdrun" or "hvd rank 3").
void Configure(Level level, bool with_timestamp, const std::string& tag);
Level CurrentLevel();

}  // namespace hvd::log

// Checked at run time, like the others (SPDLOG_TRACE compiles out unless SPDLOG_ACTIVE_LEVEL
// says otherwise, which made --log-level TRACE a synonym of DEBUG). On a hot path, test
// HVD_LOG_ENABLED(trace) first so the arguments are not even built.
#define HVD_LOG_TRACE(...) ::spdlog::trace(__VA_ARGS__)
#define HVD_LOG_ENABLED(lvl) ::spdlog::should_log(::spdlog::level::lvl)
#define HVD_LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define HVD_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define HVD_LOG_WARNING(...) ::spdlog::warn(__VA_ARGS__)
#define HVD_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)

#endif  // HVD_COMMON_LOGGING_H_
