#ifndef HVD_LAUNCHER_LOCAL_RANK_LEFTOVERS_H_
#define HVD_LAUNCHER_LOCAL_RANK_LEFTOVERS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

// RankLeftovers: what ranks killed before their own cleanup can leave on a host, removed once
// every rank of the job there has ended — by hvdrun for the ranks it started itself, by
// hvd-agent for the ranks it started:
// - shared-memory segments: segments are unnamed unless a member could not open member 0's
//   file through /proc (another pid namespace); then a member 0 killed between naming it and
//   every member mapping it leaves the name in /dev/shm (common/shm_names.h); names of this job
//   whose creator is gone are removed;
// - a timeline torn mid-growth (timeline/timeline_repair.h): rank 0 killed between the two
//   writes of a growth leaves two closing brackets; the file is repaired.
// Used from one thread.

namespace hvd::launcher {

class RankLeftovers {
 public:
  // Notes what a rank started with `env` (its complete environment) may leave. A relative
  // timeline path is resolved against the current directory (the rank's).
  void Add(const std::map<std::string, std::string>& env);

  // Removes and repairs what there is; returns one line per thing done (for --verbose, or the
  // agent's diagnostics). Safe to call more than once.
  std::vector<std::string> CleanUp() const;

 private:
  std::set<std::string> job_ids_;
  std::set<std::string> timelines_;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_RANK_LEFTOVERS_H_
