#ifndef HVD_DISCOVERY_HOST_SLOTS_H_
#define HVD_DISCOVERY_HOST_SLOTS_H_

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace hvd::discovery {

// A host where ranks may run and how many. `host` is a name or an IPv4/IPv6 address, IPv6
// without brackets. `slots` is how many ranks a static job places there (>= 1); `max_slots`
// (hostfile only) is an upper bound an elastic job may grow to, >= slots when set.
struct HostSlots {
  std::string host;
  int slots = 1;
  std::optional<int> max_slots;

  bool operator==(const HostSlots&) const = default;
};

// One "host" or "host:slots" item as written in -H and in discovery-script output; an IPv6
// address must be bracketed ("[fe80::1]:4") and is returned without brackets.
struct HostItem {
  std::string host;
  std::optional<int> slots;
};

// Parses one item (already trimmed). Errors are InvalidArgument and quote the offending
// part, but not where it came from: callers prefix the location (column, line, file).
Result<HostItem> ParseHostItem(std::string_view item);

// Validates a host name: letters, digits, '-', '_' and '.', not starting with '-' or '.',
// at most 253 characters; or an IPv6 address (hex digits, ':' and '.', an optional
// "%zone" suffix). `name` carries no brackets. Errors quote the name.
Status ValidateHostName(std::string_view name);

// Parses a slot count: decimal digits only, 1 <= value <= kMaxSlots. `what` names the
// value in the error ("slot count", "max_slots").
Result<int> ParseSlotCount(std::string_view text, std::string_view what);

inline constexpr int kMaxSlots = 1 << 20;
// The longest host name (a DNS name) ValidateHostName accepts.
inline constexpr size_t kMaxHostNameLength = 253;

// "host:slots", bracketing IPv6 addresses: the inverse of ParseHostItem.
std::string FormatHostSlots(const HostSlots& host);

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_HOST_SLOTS_H_
