#ifndef HVD_AUTOTUNE_AUTOTUNE_CACHE_H_
#define HVD_AUTOTUNE_AUTOTUNE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "autotune/params.h"
#include "common/status.h"

// A file of tuned Params keyed by a model signature, so a job that runs the same model on
// the same job shape again can skip tuning. Format (JSON, one object per file):
//
//   {"format": "hvd-autotune-cache", "version": 1,
//    "entries": {"<signature>": {"hierarchical_allreduce": false, ..., "score": 1.2e9}}}
//
// The file may hold many signatures; Store replaces only its own entry and writes through
// a temporary file of its own + rename, so readers never see a torn file, under an exclusive
// flock of "<path>.lock" (kept), so two jobs storing at once both keep their entries (until
// 2026-12-01 they shared one temporary name: a broken file, never repaired). Functions are
// thread-compatible.
namespace hvd::autotune {

// Identifies a model and job shape: tensor names, dtypes and shapes plus size and
// local_size. The digest does not depend on the order tensors are added in.
class ModelSignature {
 public:
  ModelSignature(int size, int local_size) : size_(size), local_size_(local_size) {}

  void AddTensor(std::string_view name, std::string_view dtype, const std::vector<int64_t>& shape);

  // 16 lowercase hex digits (64-bit FNV-1a over a canonical text form). Stable across
  // runs, hosts and builds.
  std::string Digest() const;

 private:
  int size_;
  int local_size_;
  std::vector<std::string> tensors_;  // "name|dtype|d0,d1,..."
};

struct CachedParams {
  Params params;
  double score = 0.0;  // bytes per second when the params were tuned
  // The knobs the storing job tuned (the entry's "tuned": knob names); the others hold what
  // that job had configured, which a later job does not take (its own configuration stays).
  // An entry without the field (written before 2026-12-01) counts every knob as tuned.
  KnobSet tuned = KnobSet().set();
};

// Adds or replaces the entry for `signature` in `path`, creating the file if needed.
// An existing file that is not a valid cache is an error (it is not overwritten).
Status StoreCachedParams(const std::string& path, const std::string& signature,
                         const CachedParams& entry);

// kNotFound when the file or the signature is absent; kInvalidArgument (naming the file)
// when the file is not a valid cache or the entry is malformed or out of range.
Result<CachedParams> LoadCachedParams(const std::string& path, const std::string& signature);

// What the two above do with the file's text, without the file: the cache is a file anyone
// may hand a job (a shared one, an edited one), so its decoder is fuzzed (docs/fuzzing.md).
// `path` only names the file in errors. What an entry may hold: the four switches as JSON
// booleans, cycle_time_ms in [0, 60000] and tensor_fusion_threshold_mb in [0, 2^20] (the
// ranges HVD_CYCLE_TIME and HVD_FUSION_THRESHOLD accept), a finite score >= 0, and optionally
// "tuned": a list of knob names (KnobName). The file is at
// most kMaxCacheBytes and its JSON at most kMaxCacheDepth levels deep.
inline constexpr size_t kMaxCacheBytes = size_t{16} << 20;
inline constexpr int kMaxCacheDepth = 8;
Result<CachedParams> ParseCachedParams(std::string_view text, std::string_view path,
                                       std::string_view signature);
// The text of the cache `existing` (empty: no file yet) with `entry` stored under
// `signature`; every other entry is kept as it was.
Result<std::string> MergeCachedParams(std::string_view existing, std::string_view path,
                                      std::string_view signature, const CachedParams& entry);

}  // namespace hvd::autotune

#endif  // HVD_AUTOTUNE_AUTOTUNE_CACHE_H_
