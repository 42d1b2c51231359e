#ifndef HVD_DISCOVERY_LSF_H_
#define HVD_DISCOVERY_LSF_H_

#include <optional>

#include "common/env_registry.h"
#include "common/status.h"
#include "discovery/allocation.h"

namespace hvd::discovery {

// The allocation of the LSF job this process runs in; nullopt when LSB_JOBID is unset.
// The first of these that is set is used:
//   LSB_DJOB_HOSTFILE  path of a file with one host per line; a repeated host is one more
//                      slot (blank lines ignored; an unreadable file is an IoError);
//   LSB_MCPU_HOSTS     "hostA 4 hostB 4": host / slot-count pairs;
//   LSB_HOSTS          "hostA hostA hostB": one word per slot.
// Hosts keep their order of first appearance. The launch host (LSF lists it first) is kept
// as an ordinary host with all its slots: on most clusters the batch script runs on a
// compute node that belongs to the allocation. (Horovod's CSM path and jsrun skip a
// dedicated launch node; on such clusters give -H or --hostfile instead.) num_proc is left
// unset, so the job fills every slot. LSB_JOBID set without any host variable is an error.
Result<std::optional<Allocation>> LsfAllocation(const env::Environment& env);

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_LSF_H_
