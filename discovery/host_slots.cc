#include "discovery/host_slots.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "discovery/text_lines.h"

namespace hvd::discovery {
namespace {

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

bool IsIpv6Char(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
}

Status ValidateIpv6(std::string_view name) {
  std::string_view address = name.substr(0, name.find('%'));
  if (address.find(':') == std::string_view::npos || address.size() < 2) {
    return Status::InvalidArgument("IPv6 address " + Quote(name) + " has no ':'");
  }
  auto bad = std::find_if_not(address.begin(), address.end(), IsIpv6Char);
  if (bad != address.end()) {
    return Status::InvalidArgument("IPv6 address " + Quote(name) + " contains " +
                                   Quote(std::string(1, *bad)));
  }
  if (address.size() < name.size()) {
    std::string_view zone = name.substr(address.size() + 1);
    if (zone.empty() || !std::all_of(zone.begin(), zone.end(), IsNameChar)) {
      return Status::InvalidArgument("IPv6 address " + Quote(name) + " has a bad zone " +
                                     Quote(zone));
    }
  }
  return Status::OK();
}

}  // namespace

Status ValidateHostName(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("empty host name");
  if (name.find(':') != std::string_view::npos) return ValidateIpv6(name);
  if (name.size() > kMaxHostNameLength) {
    return Status::InvalidArgument("host name " + Quote(name) + " is longer than 253 characters");
  }
  auto bad = std::find_if_not(name.begin(), name.end(), IsNameChar);
  if (bad != name.end()) {
    return Status::InvalidArgument("host name " + Quote(name) + " contains " +
                                   Quote(std::string(1, *bad)) +
                                   " (allowed: letters, digits, '-', '_', '.')");
  }
  if (name.front() == '-' || name.front() == '.') {
    return Status::InvalidArgument("host name " + Quote(name) + " starts with " +
                                   Quote(name.substr(0, 1)));
  }
  return Status::OK();
}

Result<int> ParseSlotCount(std::string_view text, std::string_view what) {
  std::string prefix = std::string(what) + " " + Quote(text);
  if (text.empty()) return Status::InvalidArgument(std::string(what) + " is empty");
  if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Status::InvalidArgument(prefix + " is not a positive integer");
  }
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > kMaxSlots) {
    return Status::InvalidArgument(prefix + " is too large (at most " + std::to_string(kMaxSlots) +
                                   ")");
  }
  if (value < 1) return Status::InvalidArgument(prefix + " must be at least 1");
  return value;
}

Result<HostItem> ParseHostItem(std::string_view item) {
  HostItem out;
  std::string_view name = item;
  std::optional<std::string_view> slots;
  if (!item.empty() && item.front() == '[') {
    size_t close = item.find(']');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("unmatched '[' in " + Quote(item));
    }
    name = item.substr(1, close - 1);
    std::string_view rest = item.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return Status::InvalidArgument("expected ':slots' after ']' in " + Quote(item));
      }
      slots = rest.substr(1);
    }
    if (name.find(':') == std::string_view::npos) {
      return Status::InvalidArgument("brackets are only for IPv6 addresses, got " + Quote(item));
    }
  } else {
    size_t colon = item.find(':');
    if (colon != std::string_view::npos) {
      if (item.find(':', colon + 1) != std::string_view::npos) {
        return Status::InvalidArgument("too many ':' in " + Quote(item) +
                                       " (write an IPv6 address in brackets: '[fe80::1]:4')");
      }
      name = item.substr(0, colon);
      slots = item.substr(colon + 1);
    }
  }
  HVD_RETURN_IF_ERROR(ValidateHostName(name));
  out.host = std::string(name);
  if (slots.has_value()) {
    HVD_ASSIGN_OR_RETURN(out.slots, ParseSlotCount(*slots, "slot count"));
  }
  return out;
}

std::string FormatHostSlots(const HostSlots& host) {
  bool ipv6 = host.host.find(':') != std::string::npos;
  std::string name = ipv6 ? "[" + host.host + "]" : host.host;
  return name + ":" + std::to_string(host.slots);
}

}  // namespace hvd::discovery
