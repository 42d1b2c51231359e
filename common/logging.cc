#include "common/logging.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <cctype>

namespace hvd::log {
namespace {

spdlog::level::level_enum ToSpd(Level level) {
  switch (level) {
    case Level::kTrace: return spdlog::level::trace;
    case Level::kDebug: return spdlog::level::debug;
    case Level::kInfo: return spdlog::level::info;
    case Level::kWarning: return spdlog::level::warn;
    case Level::kError: return spdlog::level::err;
    case Level::kFatal: return spdlog::level::critical;
  }
  return spdlog::level::warn;
}

Level g_level = Level::kWarning;  // Guarded by spdlog's own registry lock for the logger.

}  // namespace

Result<Level> ParseLevel(std::string_view text) {
  std::string s(text);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "trace") return Level::kTrace;
  if (s == "debug") return Level::kDebug;
  if (s == "info") return Level::kInfo;
  if (s == "warning" || s == "warn") return Level::kWarning;
  if (s == "error") return Level::kError;
  if (s == "fatal" || s == "critical") return Level::kFatal;
  return Status::InvalidArgument("unknown log level '" + std::string(text) +
                                 "' (expected one of TRACE, DEBUG, INFO, WARNING, ERROR, FATAL)");
}

const char* LevelName(Level level) {
  switch (level) {
    case Level::kTrace: return "TRACE";
    case Level::kDebug: return "DEBUG";
    case Level::kInfo: return "INFO";
    case Level::kWarning: return "WARNING";
    case Level::kError: return "ERROR";
    case Level::kFatal: return "FATAL";
  }
  return "WARNING";
}

void Configure(Level level, bool with_timestamp, const std::string& tag) {
  // Not registered in spdlog's registry, so Configure may run again (re-init, tests).
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("hvd", sink);
  std::string pattern = with_timestamp ? "[%Y-%m-%d %H:%M:%S.%f] " : "";
  pattern += tag + " %^%l%$: %v";
  logger->set_pattern(pattern);
  logger->set_level(ToSpd(level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  g_level = level;
}

Level CurrentLevel() { return g_level; }

}  // namespace hvd::log
