#include "cmd/config_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <variant>
#include <vector>

#include "common/env_registry.h"

namespace hvd::cmd {
namespace {

// Horovod's own test YAML (test/single/data/config.test.yaml) spells the timestamp switch
// logging.hide_timestamp, which Horovod's parser silently ignores (it reads with_timestamp).
// hvd honours it as the inverse of with_timestamp; with_timestamp wins when both are given.
constexpr char kHideTimestampKey[] = "logging.hide_timestamp";

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

const char* KindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a sequence";
    case YAML::NodeType::Null:
      return "null";
    default:
      return "a scalar";
  }
}

// Reads a file's YAML into a ConfigFile; every error starts "<path>:<line>: ".
class ConfigReader {
 public:
  explicit ConfigReader(std::string path) : path_(std::move(path)) {}

  Result<ConfigFile> Read(const YAML::Node& root) {
    if (root.IsNull()) return std::move(config_);
    if (!root.IsMap())
      return Error(root, "expected a mapping at the top level, got " + std::string(KindName(root)));
    for (const auto& entry : root) {
      const std::string key = entry.first.Scalar();
      if (key == "controller") {
        HVD_RETURN_IF_ERROR(ReadController(entry.second));
      } else if (IsSection(key)) {
        HVD_RETURN_IF_ERROR(ReadSection(key, entry.second));
      } else {
        return Error(entry.first, "unknown key '" + key + "' (expected one of: controller, " +
                                      fmt::to_string(fmt::join(Sections(), ", ")) + ")");
      }
    }
    if (hide_timestamp_ && !config_.knobs.log_with_timestamp.value) {
      config_.knobs.log_with_timestamp.Set(!*hide_timestamp_, Origin::kConfigFile, path_);
    }
    return std::move(config_);
  }

 private:
  Status Error(const YAML::Node& at, const std::string& message) const {
    return Status::InvalidArgument(path_ + ":" + std::to_string(at.Mark().line + 1) + ": " +
                                   message);
  }

  std::vector<std::string> Sections() {
    std::vector<std::string> out;
    for (KnobPtr k : config_.knobs.All()) {
      const char* key = std::visit([](auto* knob) { return knob->yaml_key; }, k);
      if (key == nullptr) continue;
      std::string section = std::string(key).substr(0, std::string(key).find('.'));
      if (std::find(out.begin(), out.end(), section) == out.end()) out.push_back(section);
    }
    return out;
  }

  bool IsSection(const std::string& key) {
    std::vector<std::string> all = Sections();
    return std::find(all.begin(), all.end(), key) != all.end();
  }

  std::vector<std::string> KeysOf(const std::string& section) {
    std::vector<std::string> out;
    for (KnobPtr k : config_.knobs.All()) {
      const char* key = std::visit([](auto* knob) { return knob->yaml_key; }, k);
      if (key != nullptr && std::string(key).starts_with(section + ".")) {
        out.push_back(std::string(key).substr(section.size() + 1));
      }
    }
    if (section == "logging") out.push_back("hide_timestamp");
    return out;
  }

  Status ReadController(const YAML::Node& value) {
    if (value.IsNull()) return Status::OK();
    if (!value.IsScalar())
      return Error(value,
                   "controller: expected gloo, mpi or jsrun, got " + std::string(KindName(value)));
    const std::string c = Lower(value.Scalar());
    if (c == "gloo")
      config_.controller = launcher::Controller::kGloo;
    else if (c == "mpi")
      config_.controller = launcher::Controller::kMpi;
    else if (c == "jsrun")
      config_.controller = launcher::Controller::kJsrun;
    else
      return Error(value, "controller: expected gloo, mpi or jsrun, got '" + value.Scalar() + "'");
    return Status::OK();
  }

  Status ReadSection(const std::string& section, const YAML::Node& body) {
    if (body.IsNull()) return Status::OK();
    if (!body.IsMap()) return Error(body, section + ": expected a mapping, got " + KindName(body));
    for (const auto& entry : body) {
      const std::string key = section + "." + entry.first.Scalar();
      if (key == kHideTimestampKey) {
        HVD_ASSIGN_OR_RETURN(std::optional<bool> hide, ReadBool(key, entry.second));
        if (hide) hide_timestamp_ = hide;
        continue;
      }
      KnobPtr* knob = FindKnob(key);
      if (knob == nullptr) {
        return Error(entry.first, "unknown key '" + key + "' (expected one of: " +
                                      fmt::to_string(fmt::join(KeysOf(section), ", ")) + ")");
      }
      HVD_RETURN_IF_ERROR(SetKnob(*knob, key, entry.second));
    }
    return Status::OK();
  }

  KnobPtr* FindKnob(const std::string& key) {
    knobs_ = config_.knobs.All();
    for (KnobPtr& k : knobs_) {
      const char* yaml_key = std::visit([](auto* knob) { return knob->yaml_key; }, k);
      if (yaml_key != nullptr && key == yaml_key) return &k;
    }
    return nullptr;
  }

  Result<std::optional<bool>> ReadBool(const std::string& key, const YAML::Node& value) {
    if (value.IsNull()) return std::optional<bool>();
    if (!value.IsScalar())
      return Error(value, key + ": expected a boolean, got " + KindName(value));
    Result<bool> b = env::ParseBool(value.Scalar(), key);
    if (!b.ok()) return Error(value, b.status().message());
    return std::optional<bool>(*b);
  }

  Status SetKnob(KnobPtr knob, const std::string& key, const YAML::Node& value) {
    if (value.IsNull()) return Status::OK();
    if (!value.IsScalar()) {
      return Error(value, key + ": expected a single value, got " + KindName(value));
    }
    const std::string& text = value.Scalar();
    Status parsed = std::visit([&](auto* k) { return Assign(k, text, key); }, knob);
    return parsed.ok() ? parsed : Error(value, parsed.message());
  }

  template <typename T>
  Status Assign(Knob<T>* knob, const std::string& text, const std::string& key) {
    Result<T> v = ConvertKnobValue<T>(text, key);
    if (!v.ok()) return v.status();
    knob->Set(std::move(*v), Origin::kConfigFile, path_);
    return Status::OK();
  }

  std::string path_;
  ConfigFile config_;
  std::vector<KnobPtr> knobs_;
  std::optional<bool> hide_timestamp_;
};

}  // namespace

Result<ConfigFile> ParseConfigYaml(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                                   std::to_string(e.mark.column + 1) +
                                   ": malformed YAML: " + e.msg);
  }
  try {
    return ConfigReader(path).Read(root);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ": " + e.what());
  }
}

Result<ConfigFile> LoadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status::InvalidArgument("config file " + path +
                                   ": cannot read: " + std::strerror(errno));
  }
  // A directory opens (and reads as nothing): an empty config, silently, before this check.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument("config file " + path +
                                   ": is a directory; give the YAML file's path");
  }
  // Read to at most 16 MiB: a config is a few lines, and a path such as /dev/zero read on to
  // the end grew memory until the OOM killer (until 2026-12-01).
  constexpr size_t kMaxConfigBytes = size_t{16} << 20;
  std::string text;
  char buffer[8192];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes) {
      return Status::InvalidArgument("config file " + path +
                                     ": larger than 16 MiB; give the YAML file's path");
    }
  }
  if (in.bad()) {
    return Status::InvalidArgument("config file " + path +
                                   ": cannot read: " + std::strerror(errno));
  }
  return ParseConfigYaml(text, path);
}

}  // namespace hvd::cmd
