#ifndef HVD_COMMON_SHM_NAMES_H_
#define HVD_COMMON_SHM_NAMES_H_

#include <sys/types.h>

#include <string>
#include <vector>

// The names of a job's shared-memory segments in /dev/shm, shared by the runtime that creates
// them (runtime/transports/shm/shm_segment.h) and the launcher and hvd-agent, which remove
// what a killed rank left behind (launcher/local/rank_leftovers.h).
//
// Segments are normally unnamed (an O_TMPFILE file passed by /proc/<pid>/fd); a name exists
// only while a group whose members cannot open that way gathers (shm_segment.h). A name is
// "hvd-<job>-<scope>-<pid>": <job> and <scope> are 16 hex digits of the FNV-1a hash of the job
// id and of the communicator's scope, <pid> the creating process. Member 0 unlinks the name as
// soon as every member has mapped the segment, so a name outlives its creator only when the
// creator was killed in between.

namespace hvd::control {

// "/hvd-<job>-<scope>-<pid>", the argument of shm_open.
std::string ShmSegmentName(const std::string& job_id, const std::string& scope, pid_t pid);

// "hvd-<job>-": the start of every /dev/shm entry of this job.
std::string ShmSegmentPrefix(const std::string& job_id);

// Removes the entries of `dir` (normally /dev/shm) of job `job_id` whose creating process no
// longer exists; a live creator's name is left alone (it is still gathering its group).
// Returns the names removed. Errors are ignored: this is best-effort cleanup.
std::vector<std::string> RemoveOrphanShmSegments(const std::string& job_id,
                                                 const std::string& dir = "/dev/shm");

}  // namespace hvd::control

#endif  // HVD_COMMON_SHM_NAMES_H_
