#ifndef HVD_DISCOVERY_HOSTFILE_H_
#define HVD_DISCOVERY_HOSTFILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "discovery/host_slots.h"

namespace hvd::discovery {

// Parses hostfile text (Open MPI / Horovod syntax), one host per line, in rank order:
//
//   # comment                 whole-line comment; blank lines are skipped
//   node1 slots=4             four slots
//   node2 slots=4 max_slots=8 max_slots (or max-slots) bounds elastic growth, >= slots
//   node3                     one slot
//   fe80::1 slots=2           IPv6, bare or in brackets
//   node4 slots=2  # note     trailing comment
//
// Lines may end in CRLF. Unknown keys, repeated keys, bad numbers, bad names, duplicate
// hosts and a file without hosts are InvalidArgument errors of the form
// "<filename>:<line>:<column>: <problem>; line: '<line text>'".
Result<std::vector<HostSlots>> ParseHostfile(std::string_view text, std::string_view filename);

// Reads and parses the hostfile at `path` (errors name it). An unreadable file is an IoError
// naming the path.
Result<std::vector<HostSlots>> ReadHostfile(const std::string& path);

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_HOSTFILE_H_
