#ifndef HVD_DISCOVERY_TEXT_FILE_H_
#define HVD_DISCOVERY_TEXT_FILE_H_

#include <string>
#include <string_view>

#include "common/status.h"

namespace hvd::discovery {

// Reads a whole (small) text file. A file that cannot be opened or read is an IoError
// "cannot read <what> '<path>': <reason>", e.g. what = "hostfile".
Result<std::string> ReadTextFile(const std::string& path, std::string_view what);

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_TEXT_FILE_H_
