// Target "preflight_answers": what a remote host prints back to hvdrun --check (the output of
// `hvd-agent --version` and `hvd-agent --probe` after whatever its login prints), delivered in
// pieces as SSH channel reads deliver it (launcher/preflight_answers.h: KeepTail,
// VersionAnswer, ReadProbeAnswer).
//
// The input: pieces, each a length byte and that many bytes (a length of 0 repeats the previous
// piece 512 times, the first 4 times it appears: a host that prints without end; 512 of the
// longest piece are twice what is kept).
//
// Invariants: what is kept is the output's last kMaxRemoteOutput bytes; every answer shown is
// printable ASCII of bounded length; an answer line, with anything printed before it, reads back.
#include <string>

#include "common/check.h"
#include "launcher/preflight_answers.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

void CheckShown(const std::string& answer) {
  HVD_CHECK(answer.size() <= 4 * launcher::kMaxAnswerBytes) << answer.size();
  for (unsigned char c : answer) HVD_CHECK(c >= 0x20 && c < 0x7f) << int{c};
}

}  // namespace

std::string FuzzPreflightAnswers(std::string_view input) {
  FuzzInput in(input);
  std::string kept;
  std::string whole;  // everything, to check the tail against (bounded by the repeats)
  std::string_view last;
  int repeats = 0;
  while (!in.empty()) {
    const uint8_t length = in.Byte();
    if (length == 0) {
      if (++repeats > 4) continue;
      for (int i = 0; i < 512 && !last.empty(); ++i) {
        launcher::KeepTail(&kept, last);
        whole.append(last);
      }
      continue;
    }
    last = in.Take(length);
    launcher::KeepTail(&kept, last);
    whole.append(last);
  }
  HVD_CHECK(kept.size() <= launcher::kMaxRemoteOutput);
  HVD_CHECK(kept ==
            whole.substr(whole.size() - std::min(whole.size(), launcher::kMaxRemoteOutput)));

  std::string outcome;
  const std::string version = launcher::VersionAnswer(kept);
  CheckShown(version);
  const launcher::ProbeAnswer probe = launcher::ReadProbeAnswer(kept);
  if (probe.interface) CheckShown(*probe.interface);
  if (probe.reach) CheckShown(*probe.reach);
  if (!probe.interface && !probe.reach) Note(&outcome, "no probe answer");

  // The agent's own answers, after anything: read back as printed
  const std::string agent = "\ninterface ok hvd-br0 10.77.0.2\nreach ok\n";
  const launcher::ProbeAnswer after = launcher::ReadProbeAnswer(kept + agent);
  HVD_CHECK(after.interface == "ok hvd-br0 10.77.0.2" && after.reach == "ok");
  HVD_CHECK(launcher::VersionAnswer(kept + "\nhvd-agent 0.1.0\r\n") == "hvd-agent 0.1.0");
  return outcome;
}

}  // namespace hvd::fuzz
