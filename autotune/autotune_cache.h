#ifndef HVD_AUTOTUNE_AUTOTUNE_CACHE_H_
#define HVD_AUTOTUNE_AUTOTUNE_CACHE_H_

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
// a temporary file + rename, so readers never see a torn file. No locking between
// processes: only the coordinator of one job writes. Functions are thread-compatible.
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
};

// Adds or replaces the entry for `signature` in `path`, creating the file if needed.
// An existing file that is not a valid cache is an error (it is not overwritten).
Status StoreCachedParams(const std::string& path, const std::string& signature,
                         const CachedParams& entry);

// kNotFound when the file or the signature is absent; kInvalidArgument (naming the file)
// when the file is not a valid cache.
Result<CachedParams> LoadCachedParams(const std::string& path, const std::string& signature);

}  // namespace hvd::autotune

#endif  // HVD_AUTOTUNE_AUTOTUNE_CACHE_H_
