#include "autotune/autotune_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/fnv1a.h"

namespace hvd::autotune {
namespace {

constexpr const char* kFormat = "hvd-autotune-cache";
constexpr int kVersion = 1;

nlohmann::json ToJson(const CachedParams& entry) {
  const Params& p = entry.params;
  return {{"hierarchical_allreduce", p.hierarchical_allreduce},
          {"hierarchical_allgather", p.hierarchical_allgather},
          {"torus_allreduce", p.torus_allreduce},
          {"cache_enabled", p.cache_enabled},
          {"cycle_time_ms", p.cycle_time_ms},
          {"tensor_fusion_threshold_mb", p.fusion_threshold_mb},
          {"score", entry.score}};
}

CachedParams FromJson(const nlohmann::json& j) {  // throws nlohmann::json::exception
  CachedParams entry;
  entry.params.hierarchical_allreduce = j.at("hierarchical_allreduce").get<bool>();
  entry.params.hierarchical_allgather = j.at("hierarchical_allgather").get<bool>();
  entry.params.torus_allreduce = j.at("torus_allreduce").get<bool>();
  entry.params.cache_enabled = j.at("cache_enabled").get<bool>();
  entry.params.cycle_time_ms = j.at("cycle_time_ms").get<double>();
  entry.params.fusion_threshold_mb = j.at("tensor_fusion_threshold_mb").get<double>();
  entry.score = j.at("score").get<double>();
  return entry;
}

// Reads the whole cache document; kNotFound if the file does not exist.
Result<nlohmann::json> ReadCache(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT)
      return Status::NotFound(fmt::format("autotune cache '{}' does not exist", path));
    return Status::IoError(
        fmt::format("cannot read autotune cache '{}': {}", path, std::strerror(errno)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return Status::InvalidArgument(fmt::format("autotune cache '{}' is not valid JSON", path));
  }
  if (!doc.is_object() || doc.value("format", "") != kFormat ||
      doc.value("version", 0) != kVersion || !doc.contains("entries") ||
      !doc["entries"].is_object()) {
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

Status StoreCachedParams(const std::string& path, const std::string& signature,
                         const CachedParams& entry) {
  nlohmann::json doc;
  Result<nlohmann::json> existing = ReadCache(path);
  if (existing.ok()) {
    doc = std::move(existing).value();
  } else if (existing.status().code() == StatusCode::kNotFound) {
    doc = {{"format", kFormat}, {"version", kVersion}, {"entries", nlohmann::json::object()}};
  } else {
    return existing.status();
  }
  doc["entries"][signature] = ToJson(entry);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << doc.dump(2) << "\n";
    out.flush();
    if (!out) {
      return Status::IoError(
          fmt::format("cannot write autotune cache '{}': {}", tmp, std::strerror(errno)));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IoError(
        fmt::format("cannot replace autotune cache '{}': {}", path, std::strerror(errno)));
  }
  return Status::OK();
}

Result<CachedParams> LoadCachedParams(const std::string& path, const std::string& signature) {
  HVD_ASSIGN_OR_RETURN(nlohmann::json doc, ReadCache(path));
  const nlohmann::json& entries = doc["entries"];
  auto it = entries.find(signature);
  if (it == entries.end()) {
    return Status::NotFound(
        fmt::format("autotune cache '{}' has no entry for model signature {}", path, signature));
  }
  try {
    return FromJson(*it);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(
        fmt::format("autotune cache '{}': entry {} is malformed: {}", path, signature, e.what()));
  }
}

}  // namespace hvd::autotune
