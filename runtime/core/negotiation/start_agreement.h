#ifndef HVD_RUNTIME_CORE_NEGOTIATION_START_AGREEMENT_H_
#define HVD_RUNTIME_CORE_NEGOTIATION_START_AGREEMENT_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hvd::runtime {

// A knob every member's negotiation must share (Runtime::CheckSameEverywhere says why), with
// this rank's value.
struct StartKnob {
  const char* name;
  int64_t value;
};

// This rank's line for rank 0: "<local size> <each knob's value> <process sets as text>".
std::string EncodeStartLine(int64_t local_size, std::span<const StartKnob> knobs,
                            const std::string& sets);

// Rank 0's verdict over every rank's line (in rank order; `local_size`, `knobs` and `sets` are
// rank 0's own): "1" when every line agrees with rank 0's and every host runs as many ranks,
// "0" when they agree but the local sizes differ (not homogeneous), else the error every rank
// fails init with: the first knob that differs, the process sets, or a line that does not read
// as one (naming its rank; the lines come over the job's own connections, so that is a rank of
// another build or a bug, never a user's input).
std::string JudgeStartLines(const std::vector<std::string>& lines, int64_t local_size,
                            std::span<const StartKnob> knobs, const std::string& sets);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_NEGOTIATION_START_AGREEMENT_H_
