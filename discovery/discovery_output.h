#ifndef HVD_DISCOVERY_DISCOVERY_OUTPUT_H_
#define HVD_DISCOVERY_DISCOVERY_OUTPUT_H_

#include <optional>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "discovery/host_slots.h"

namespace hvd::discovery {

// Parses the stdout of an elastic --host-discovery-script: one "host" or "host:slots"
// ("[ipv6]:slots") per line, surrounding whitespace and CRLF tolerated, blank lines ignored.
// Hosts keep the order of their first line. A repeated host is collapsed when it resolves to
// the same slots and an error when the slots differ. A line without slots gets
// `default_slots` (--slots-per-host); without one that line is an error naming it (Horovod
// would crash later). Errors: "discovery script output line N: ...; line: '<text>'".
Result<std::vector<HostSlots>> ParseDiscoveryOutput(std::string_view text,
                                                    std::optional<int> default_slots);

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_DISCOVERY_OUTPUT_H_
