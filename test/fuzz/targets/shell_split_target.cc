// Target "shell_split": the shell-like splitting of --mpi-args and --binding-args
// (launcher/schedulers/mpirun_command.h, ShellSplit), whose words go onto mpirun's command
// line. The input is the flag's value. What splits re-splits to the same words once each word
// is single-quoted as a shell would need it.
#include "common/check.h"
#include "launcher/schedulers/mpirun_command.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzShellSplit(std::string_view input) {
  std::string outcome;
  Result<std::vector<std::string>> words = launcher::ShellSplit(std::string(input));
  Note(&outcome, words.status());
  if (words.ok()) {
    std::string quoted;
    for (const std::string& w : *words) {
      quoted += " '";
      for (char c : w) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      quoted += "'";
    }
    Result<std::vector<std::string>> again = launcher::ShellSplit(quoted);
    HVD_CHECK(again.ok()) << again.status().message();
    HVD_CHECK(*again == *words) << quoted;
  }
  return outcome;
}

}  // namespace hvd::fuzz
