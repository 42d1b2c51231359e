// libFuzzer's entry for one target; HVD_FUZZ_ENTRY names its function (fuzz_target.h).
#include <cstddef>
#include <cstdint>

#include "test/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hvd::fuzz::HVD_FUZZ_ENTRY(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
