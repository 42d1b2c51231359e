#ifndef HVD_COMMON_ENV_REGISTRY_H_
#define HVD_COMMON_ENV_REGISTRY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

// The one place environment variables are declared and read (STYLE.md "Configuration").
// Every variable has a canonical HVD_* name and, where Horovod has one, its HOROVOD_* alias;
// the canonical name wins when both are set. Modules read the registry once into their own
// config structs (runtime::RuntimeConfig, launcher::LaunchSpec); nothing else calls getenv.
namespace hvd::env {

enum class VarType { kString, kInt, kFloat, kBool };

// Who reads the variable: the launcher, the runtime in each worker, or both.
enum class VarScope { kLauncher, kRuntime, kBoth };

struct VarSpec {
  const char* name;           // canonical, HVD_*
  const char* horovod_alias;  // HOROVOD_* or "" when Horovod has no such variable
  VarType type;
  const char* default_value;  // as text; "" = unset
  VarScope scope;
  const char* help;           // one line
};

// Every declared variable, in a stable documentation order.
const std::vector<VarSpec>& AllVars();

// Finds a variable by canonical name or by alias; nullptr when not declared.
const VarSpec* FindVar(std::string_view name);

// Where a value came from, for --print-config.
struct Lookup {
  std::string value;
  std::string source;  // the variable name it was read from, or "default"
  bool is_default = true;
};

// An immutable snapshot of an environment (the process's, or a map in tests). Reading the
// process environment happens only in FromProcess().
class Environment {
 public:
  static Environment FromProcess();
  static Environment FromMap(std::map<std::string, std::string> vars);

  // Raw access to any variable, declared or not (e.g. SLURM_*, PATH); nullopt if unset.
  std::optional<std::string> Raw(std::string_view name) const;
  const std::map<std::string, std::string>& all() const { return vars_; }

  // Value of a declared variable: canonical name, then alias, then the default.
  // HVD_CHECKs that `name` is declared (a typo is a programming error).
  Lookup Get(std::string_view name) const;
  // True when the canonical name or its alias is set (even to "").
  bool IsSet(std::string_view name) const;

  // Typed reads; a malformed value is an InvalidArgument that names the variable and value.
  // Booleans accept 1/0, true/false, yes/no, on/off (any case) and, like Horovod, any integer
  // (non-zero = true).
  Result<std::string> GetString(std::string_view name) const;
  Result<int64_t> GetInt(std::string_view name) const;
  Result<double> GetFloat(std::string_view name) const;
  Result<bool> GetBool(std::string_view name) const;

 private:
  std::map<std::string, std::string> vars_;
};

// Parsers shared with the command line and YAML config; errors quote the text and `what`.
Result<int64_t> ParseInt(std::string_view text, std::string_view what);
Result<double> ParseFloat(std::string_view text, std::string_view what);
Result<bool> ParseBool(std::string_view text, std::string_view what);

}  // namespace hvd::env

#endif  // HVD_COMMON_ENV_REGISTRY_H_
