#ifndef HVD_TIMELINE_CLOCK_REPLY_H_
#define HVD_TIMELINE_CLOCK_REPLY_H_

#include <cstdint>
#include <string>
#include <string_view>

// The all-ranks timeline's clock sync (the runtime's EstimateClockOffsets): rank 0 broadcasts
// its clock reading t1, every other rank answers "<t2> <t3>", its own clock when the ping
// arrived and when it answered, in microseconds. Readings lie in [0, kMaxClockUs) so that the
// differences the estimate takes cannot overflow whatever a member sends.
namespace hvd::timeline {

inline constexpr int64_t kMaxClockUs = int64_t{1} << 62;

// One reading: decimal digits only, in [0, kMaxClockUs).
bool ParseClockReading(std::string_view text, int64_t* us);
// "<t2> <t3>": two readings, one space between, t2 <= t3.
bool ParseClockReply(std::string_view reply, int64_t* t2, int64_t* t3);
std::string EncodeClockReply(int64_t t2, int64_t t3);

}  // namespace hvd::timeline

#endif  // HVD_TIMELINE_CLOCK_REPLY_H_
