#ifndef HVD_LAUNCHER_PREFLIGHT_ANSWERS_H_
#define HVD_LAUNCHER_PREFLIGHT_ANSWERS_H_

#include <optional>
#include <string>
#include <string_view>

// What hvdrun --check reads back from a remote host (preflight.cc): the output of
// `hvd-agent --version` and `hvd-agent --probe` over SSH, after whatever the login printed
// (a banner, an echo in ~/.bashrc, or a host that prints anything). Kept bounded, and shown in
// the table as printable text only: a remote host's bytes never reach the user's terminal as
// control sequences. Pure functions; fuzzed by the target `preflight_answers`.
namespace hvd::launcher {

// At most this much of a remote command's output is kept: its end, where the answers are.
inline constexpr size_t kMaxRemoteOutput = 64 * 1024;
// At most this much of one answer is shown.
inline constexpr size_t kMaxAnswerBytes = 200;

// Appends `more` to `out`, keeping only its last kMaxRemoteOutput bytes.
void KeepTail(std::string* out, std::string_view more);

// The agent's --version answer: the output's last line (ignoring line ends at its end),
// printable.
std::string VersionAnswer(std::string_view out);

// The --probe answers: the last "interface <answer>" and "reach <answer>" lines, printable.
struct ProbeAnswer {
  std::optional<std::string> interface;
  std::optional<std::string> reach;
};
ProbeAnswer ReadProbeAnswer(std::string_view out);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_PREFLIGHT_ANSWERS_H_
