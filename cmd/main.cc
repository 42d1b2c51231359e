// hvdrun: parse the command line into a LaunchSpec, hand it to the launcher, return its exit
// code. Everything testable lives in hvd_cmd (flags.h) and hvd_launcher (run.h).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <string>
#include <vector>

#include "cmd/check_build.h"
#include "cmd/flags.h"
#include "cmd/print_config.h"
#include "common/env_registry.h"
#include "common/logging.h"
#include "launcher/elastic/elastic_summary.h"
#include "launcher/outcome/exit_codes.h"
#include "launcher/run.h"

int main(int argc, char** argv) {
  // Descriptors 0-2 closed by whoever started hvdrun are /dev/null from here on: otherwise the
  // first ones hvdrun opens take their numbers. Until 2026-12-01 `hvdrun ... <&-` put the
  // signalfd on 0, where rank 0's stdin pump read the signals (hvdrun never ended), and with
  // stderr closed the job key's memfd became fd 2, which a rank's stderr then replaced.
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      const int null_fd = ::open("/dev/null", O_RDWR);  // the lowest free number: fd
      if (null_fd > 2) ::close(null_fd);
    }
  }
  const hvd::env::Environment env = hvd::env::Environment::FromProcess();
  hvd::Result<hvd::cmd::ParsedCommandLine> parsed =
      hvd::cmd::ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc), env);
  if (!parsed.ok()) {
    std::cerr << "hvdrun: error: " << parsed.status().message()
              << "\nrun 'hvdrun --help' for usage\n";
    return hvd::launcher::kExitUsage;
  }
  const hvd::cmd::ParsedCommandLine& cli = *parsed;
  if (cli.show_help) std::cout << cli.help_text;
  if (cli.show_version) std::cout << hvd::cmd::VersionText();
  if (cli.check_build) std::cout << hvd::cmd::CheckBuildText() << "\n";
  if (cli.show_help || cli.show_version || cli.check_build) return hvd::launcher::kExitOk;

  hvd::Result<hvd::log::Level> level = hvd::log::ParseLevel(cli.spec.log_level);
  hvd::log::Configure(level.ok() ? *level : hvd::log::Level::kWarning, cli.spec.log_with_timestamp,
                      "hvdrun");
  for (const std::string& warning : cli.warnings) HVD_LOG_WARNING("{}", warning);
  if (cli.print_config) {
    std::cout << hvd::cmd::FormatConfigTable(cli.settings, env);
    if (cli.spec.elastic()) std::cout << "\n" << hvd::launcher::DescribeElastic(cli.spec);
    return hvd::launcher::kExitOk;
  }
  return hvd::launcher::Run(cli.spec, env);
}
