#ifndef HVD_DISCOVERY_HOST_SPEC_H_
#define HVD_DISCOVERY_HOST_SPEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "discovery/host_slots.h"

namespace hvd::discovery {

// Parses the -H / --hosts value: comma-separated items "host" (1 slot), "host:slots", or
// "[ipv6]:slots" (stored without brackets), in rank order. Whitespace around items is
// ignored. Empty items, duplicate hosts, slot counts that are not positive integers and
// malformed names are InvalidArgument errors quoting the whole spec, the item and the item's
// 1-based column. Unlike Horovod, slots may be omitted and IPv6 addresses are accepted.
Result<std::vector<HostSlots>> ParseHostSpec(std::string_view text);

// "a:2,b:1,[fe80::1]:4": the inverse of ParseHostSpec (max_slots is not representable).
std::string FormatHostSpec(const std::vector<HostSlots>& hosts);

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_HOST_SPEC_H_
