#include "autotune/autotune_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/fnv1a.h"

namespace hvd::autotune {
namespace {

constexpr const char* kFormat = "hvd-autotune-cache";
constexpr int kVersion = 1;

constexpr Knob kAllKnobs[] = {Knob::kFusionThreshold,       Knob::kCycleTime,
                              Knob::kHierarchicalAllreduce, Knob::kHierarchicalAllgather,
                              Knob::kTorusAllreduce,        Knob::kCacheEnabled};

nlohmann::json TunedNames(const KnobSet& tuned) {
  nlohmann::json names = nlohmann::json::array();
  for (Knob knob : kAllKnobs) {
    if (Contains(tuned, knob)) names.push_back(KnobName(knob));
  }
  return names;
}

nlohmann::json ToJson(const CachedParams& entry) {
  const Params& p = entry.params;
  return {{"hierarchical_allreduce", p.hierarchical_allreduce},
          {"hierarchical_allgather", p.hierarchical_allgather},
          {"torus_allreduce", p.torus_allreduce},
          {"cache_enabled", p.cache_enabled},
          {"cycle_time_ms", p.cycle_time_ms},
          {"tensor_fusion_threshold_mb", p.fusion_threshold_mb},
          {"score", entry.score},
          {"tuned", TunedNames(entry.tuned)}};
}

// The field `key` of an entry as a bool; throws the message naming it.
bool BoolField(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) throw std::invalid_argument(fmt::format("'{}' is missing", key));
  if (!it->is_boolean()) {
    throw std::invalid_argument(fmt::format("'{}' is {}, not true or false", key, it->dump()));
  }
  return it->get<bool>();
}

// The field `key` of an entry as a finite number in [lo, hi]; throws the message naming it.
double NumberField(const nlohmann::json& j, const char* key, double lo, double hi) {
  const auto it = j.find(key);
  if (it == j.end()) throw std::invalid_argument(fmt::format("'{}' is missing", key));
  const double v = it->is_number() ? it->get<double>() : std::nan("");
  if (!(v >= lo && v <= hi)) {  // also NaN, and what is not a number
    throw std::invalid_argument(
        fmt::format("'{}' is {}, not a number in [{}, {}]", key, it->dump(), lo, hi));
  }
  return v;
}

// The ranges HVD_CYCLE_TIME and HVD_FUSION_THRESHOLD accept (runtime_config.cc), so a knob the
// user could set is a value the cache can hold, and nothing else reaches the runtime.
constexpr double kMaxCycleTimeMs = 60000.0;
constexpr double kMaxFusionThresholdMb = 1024.0 * 1024.0;  // 2^40 bytes

CachedParams FromJson(const nlohmann::json& j) {  // throws std::invalid_argument
  if (!j.is_object()) throw std::invalid_argument("it is " + j.dump() + ", not an object");
  CachedParams entry;
  entry.params.hierarchical_allreduce = BoolField(j, "hierarchical_allreduce");
  entry.params.hierarchical_allgather = BoolField(j, "hierarchical_allgather");
  entry.params.torus_allreduce = BoolField(j, "torus_allreduce");
  entry.params.cache_enabled = BoolField(j, "cache_enabled");
  entry.params.cycle_time_ms = NumberField(j, "cycle_time_ms", 0.0, kMaxCycleTimeMs);
  entry.params.fusion_threshold_mb =
      NumberField(j, "tensor_fusion_threshold_mb", 0.0, kMaxFusionThresholdMb);
  entry.score = NumberField(j, "score", 0.0, std::numeric_limits<double>::max());
  if (const auto tuned = j.find("tuned"); tuned != j.end()) {
    if (!tuned->is_array()) {
      throw std::invalid_argument("'tuned' is " + tuned->dump() + ", not a list of knob names");
    }
    entry.tuned.reset();
    for (const nlohmann::json& name : *tuned) {
      const Knob* knob = std::find_if(std::begin(kAllKnobs), std::end(kAllKnobs), [&](Knob k) {
        return name.is_string() && name.get<std::string>() == KnobName(k);
      });
      if (knob == std::end(kAllKnobs)) {
        throw std::invalid_argument("'tuned' holds " + name.dump() + ", not a knob name");
      }
      entry.tuned.set(static_cast<size_t>(*knob));
    }
  }
  return entry;
}

// The whole file, or its first kMaxCacheBytes and a little more (a cache of even thousands of
// models is tens of kilobytes); kNotFound if it does not exist.
Result<std::string> ReadCacheText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT)
      return Status::NotFound(fmt::format("autotune cache '{}' does not exist", path));
    return Status::IoError(
        fmt::format("cannot read autotune cache '{}': {}", path, std::strerror(errno)));
  }
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= kMaxCacheBytes && in.read(chunk, sizeof(chunk)).gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) {
    return Status::IoError(
        fmt::format("cannot read autotune cache '{}': {}", path, std::strerror(errno)));
  }
  return text;  // ParseCache refuses it when the read went past kMaxCacheBytes
}

// The cache document of `text`, its format checked (not its entries).
Result<nlohmann::json> ParseCache(std::string_view text, std::string_view path) {
  const auto invalid = [&](std::string_view why) {
    return Status::InvalidArgument(fmt::format("autotune cache '{}' {}", path, why));
  };
  if (text.size() > kMaxCacheBytes) {
    return invalid(fmt::format("is larger than {} MiB", kMaxCacheBytes >> 20));
  }
  // nlohmann's parser takes a NUL byte outside a string for the end of its input.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return invalid(fmt::format("is not valid JSON (a NUL byte at byte {})", nul));
  }
  // The parse itself keeps its depth on the heap; what is deeper than any cache is refused
  // here so that the dump in MergeCachedParams, which recurses, never meets it.
  bool too_deep = false;
  const nlohmann::json::parser_callback_t depth_check =
      [&too_deep](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxCacheDepth) too_deep = true;
        return !too_deep;
      };
  nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end(), depth_check,
                                             /*allow_exceptions=*/false);
  if (too_deep) return invalid(fmt::format("is nested deeper than {} levels", kMaxCacheDepth));
  if (doc.is_discarded()) return invalid("is not valid JSON");
  const auto string_is = [&](const char* key, std::string_view want) {
    const auto it = doc.find(key);
    return it != doc.end() && it->is_string() && it->get_ref<const std::string&>() == want;
  };
  const auto version = doc.is_object() ? doc.find("version") : doc.end();
  if (!doc.is_object() || !string_is("format", kFormat) || version == doc.end() ||
      !version->is_number_integer() || version->get<int64_t>() != kVersion ||
      !doc.contains("entries") || !doc["entries"].is_object()) {
    return Status::InvalidArgument(fmt::format(
        "'{}' is not an hvd autotune cache (format {} version {})", path, kFormat, kVersion));
  }
  return doc;
}

}  // namespace

void ModelSignature::AddTensor(std::string_view name, std::string_view dtype,
                               const std::vector<int64_t>& shape) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? "," : "") + std::to_string(shape[i]);
  tensors_.push_back(fmt::format("{}|{}|{}", name, dtype, dims));
}

std::string ModelSignature::Digest() const {
  std::vector<std::string> sorted = tensors_;
  std::sort(sorted.begin(), sorted.end());
  uint64_t hash =
      Fnv1a(fmt::format("size={};local_size={};n={}\n", size_, local_size_, sorted.size()));
  // Length-prefix each entry so no two different lists share a canonical text.
  for (const std::string& t : sorted) hash = Fnv1a(fmt::format("{}:{}\n", t.size(), t), hash);
  return fmt::format("{:016x}", hash);
}

Result<std::string> MergeCachedParams(std::string_view existing, std::string_view path,
                                      std::string_view signature, const CachedParams& entry) {
  nlohmann::json doc;
  if (existing.empty()) {
    doc = {{"format", kFormat}, {"version", kVersion}, {"entries", nlohmann::json::object()}};
  } else {
    HVD_ASSIGN_OR_RETURN(doc, ParseCache(existing, path));
  }
  doc["entries"][std::string(signature)] = ToJson(entry);
  // Invalid UTF-8 in another entry's key or value is written back as U+FFFD, not thrown.
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<CachedParams> ParseCachedParams(std::string_view text, std::string_view path,
                                       std::string_view signature) {
  if (text.empty()) {  // as no file: MergeCachedParams starts a cache in it
    return Status::NotFound(fmt::format("autotune cache '{}' is empty", path));
  }
  HVD_ASSIGN_OR_RETURN(nlohmann::json doc, ParseCache(text, path));
  const nlohmann::json& entries = doc["entries"];
  auto it = entries.find(signature);
  if (it == entries.end()) {
    return Status::NotFound(
        fmt::format("autotune cache '{}' has no entry for model signature {}", path, signature));
  }
  try {
    return FromJson(*it);
  } catch (const std::invalid_argument& e) {
    return Status::InvalidArgument(
        fmt::format("autotune cache '{}': entry {} is malformed: {}", path, signature, e.what()));
  }
}

Status StoreCachedParams(const std::string& path, const std::string& signature,
                         const CachedParams& entry) {
  // Read, merge and replace under an exclusive lock of "<path>.lock": another job storing at
  // the same moment waits, then merges into what this one wrote.
  const std::string lock_path = path + ".lock";
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) {
    return Status::IoError(fmt::format("cannot lock autotune cache '{}': {}: {}", path, lock_path,
                                       std::strerror(errno)));
  }
  struct LockGuard {
    int fd;
    ~LockGuard() { ::close(fd); }  // closing releases the flock
  } guard{lock_fd};
  while (::flock(lock_fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      return Status::IoError(
          fmt::format("cannot lock autotune cache '{}': {}", path, std::strerror(errno)));
    }
  }
  Result<std::string> existing = ReadCacheText(path);
  if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) {
    return existing.status();
  }
  HVD_ASSIGN_OR_RETURN(
      std::string text,
      MergeCachedParams(existing.ok() ? *existing : std::string(), path, signature, entry));
  // A temporary name of this process's own, beside the file (the rename stays on one file
  // system).
  std::string tmp = path + ".tmp.XXXXXX";
  const int tmp_fd = ::mkstemp(tmp.data());
  if (tmp_fd < 0) {
    return Status::IoError(
        fmt::format("cannot write autotune cache '{}': {}", tmp, std::strerror(errno)));
  }
  ::fchmod(tmp_fd, 0644);
  std::string_view rest = text;
  while (!rest.empty()) {
    const ssize_t n = ::write(tmp_fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(tmp_fd);
      ::unlink(tmp.c_str());
      return Status::IoError(
          fmt::format("cannot write autotune cache '{}': {}", tmp, std::strerror(error)));
    }
    rest.remove_prefix(static_cast<size_t>(n));
  }
  ::close(tmp_fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return Status::IoError(
        fmt::format("cannot replace autotune cache '{}': {}", path, std::strerror(error)));
  }
  return Status::OK();
}

Result<CachedParams> LoadCachedParams(const std::string& path, const std::string& signature) {
  HVD_ASSIGN_OR_RETURN(std::string text, ReadCacheText(path));
  return ParseCachedParams(text, path, signature);
}

}  // namespace hvd::autotune
