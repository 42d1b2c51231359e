// Target "autotune_cache": an HVD_AUTOTUNE_CACHE file (autotune/autotune_cache.h), which a job
// reads when warm-up ends and rewrites when tuning ends; anyone may hand a job such a file (a
// shared one, an edited one). The input is a model signature up to the first newline, then
// the file's text. An entry that reads is within the knobs' ranges; storing an entry into a
// file that reads as a cache keeps the other entries as they were, and reads back exactly.
#include <cmath>

#include "autotune/autotune_cache.h"
#include "common/check.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzAutotuneCache(std::string_view input) {
  using autotune::CachedParams;
  FuzzInput in(input);
  const std::string_view signature = in.Until('\n');
  const std::string_view text = in.Rest();
  std::string outcome;
  Result<CachedParams> loaded = autotune::ParseCachedParams(text, "fuzz.json", signature);
  Note(&outcome, loaded.status());
  if (loaded.ok()) {
    const autotune::Params& p = loaded->params;
    HVD_CHECK(p.cycle_time_ms >= 0 && p.cycle_time_ms <= 60000) << p.cycle_time_ms;
    HVD_CHECK(p.fusion_threshold_mb >= 0 && p.fusion_threshold_mb <= 1024.0 * 1024.0)
        << p.fusion_threshold_mb;
    HVD_CHECK(std::isfinite(loaded->score) && loaded->score >= 0) << loaded->score;
  }

  // Store a tuned entry under another signature, as the job that tuned it would (a digest:
  // 16 hex digits).
  CachedParams mine;
  mine.params.cycle_time_ms = 2.5;
  mine.params.fusion_threshold_mb = 64;
  mine.score = 1e9;
  const std::string other =
      signature == "0123456789abcdef" ? "fedcba9876543210" : "0123456789abcdef";
  Result<std::string> merged = autotune::MergeCachedParams(text, "fuzz.json", other, mine);
  Note(&outcome, merged.status());
  if (!merged.ok()) {
    // Only what does not read as a cache at all is refused; a file that reads (missing or
    // malformed entry included) takes the new entry.
    HVD_CHECK(!loaded.ok() && loaded.status().message().find("entry") == std::string::npos)
        << merged.status().message() << " / " << loaded.status().message();
    return outcome;
  }
  Result<CachedParams> back = autotune::ParseCachedParams(*merged, "fuzz.json", other);
  HVD_CHECK(back.ok()) << back.status().message();
  HVD_CHECK(back->params == mine.params && back->score == mine.score);
  Result<CachedParams> again = autotune::ParseCachedParams(*merged, "fuzz.json", signature);
  HVD_CHECK_EQ(static_cast<int>(again.status().code()), static_cast<int>(loaded.status().code()))
      << again.status().message() << " / " << loaded.status().message();
  if (loaded.ok()) {
    HVD_CHECK(again->params == loaded->params && again->score == loaded->score);
  }
  return outcome;
}

}  // namespace hvd::fuzz
