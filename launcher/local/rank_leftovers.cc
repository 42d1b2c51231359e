#include "launcher/local/rank_leftovers.h"

#include <filesystem>
#include <system_error>

#include "common/env_registry.h"
#include "common/shm_names.h"
#include "timeline/timeline.h"
#include "timeline/timeline_repair.h"

namespace hvd::launcher {

void RankLeftovers::Add(const std::map<std::string, std::string>& env) {
  const env::Environment vars = env::Environment::FromMap(env);
  if (auto job = vars.Raw("HVD_JOB_ID"); job && !job->empty()) job_ids_.insert(*job);
  Result<std::string> timeline = vars.GetString("HVD_TIMELINE");
  if (timeline.ok() && !timeline->empty() && *timeline != timeline::kDynamicTimeline) {
    std::error_code ec;
    std::filesystem::path path = std::filesystem::absolute(*timeline, ec);
    timelines_.insert(ec ? *timeline : path.string());
  }
}

std::vector<std::string> RankLeftovers::CleanUp() const {
  std::vector<std::string> done;
  for (const std::string& job : job_ids_) {
    for (const std::string& name : control::RemoveOrphanShmSegments(job)) {
      done.push_back("removed /dev/shm/" + name + ", left by a rank killed while its group formed");
    }
  }
  for (const std::string& path : timelines_) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) continue;
    Result<bool> repaired = timeline::RepairTornTimelineFile(path);
    if (!repaired.ok()) {
      done.push_back(repaired.status().message());
    } else if (*repaired) {
      done.push_back("repaired timeline '" + path + "': its writer was killed while growing it");
    }
  }
  return done;
}

}  // namespace hvd::launcher
