#ifndef HVD_COMMON_JOB_KEY_H_
#define HVD_COMMON_JOB_KEY_H_

#include <array>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace hvd::control {

// The per-job 256-bit secret that authenticates every control-channel frame. hvdrun makes
// one per job; local workers receive it through an inherited memfd named by HVD_SECRET_FD
// (never argv, never logs); remote workers over the SSH channel.
using JobKey = std::array<uint8_t, 32>;

// 32 bytes from the OS CSPRNG (OpenSSL RAND_bytes).
Result<JobKey> GenerateJobKey();

// Creates a sealed memfd holding the key (not close-on-exec, so children inherit it).
Result<int> WriteKeyToMemfd(const JobKey& key);
// Reads the key back from an inherited descriptor (pread at offset 0, so any number of
// readers and re-inits work).
Result<JobKey> ReadKeyFromFd(int fd);

}  // namespace hvd::control

#endif  // HVD_COMMON_JOB_KEY_H_
