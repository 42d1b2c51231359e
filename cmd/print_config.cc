#include "cmd/print_config.h"

#include <algorithm>
#include <array>
#include <vector>

namespace hvd::cmd {
namespace {

constexpr size_t kColumns = 5;
using Row = std::array<std::string, kColumns>;

Row RowFor(const env::VarSpec& var, const std::map<std::string, Setting>& settings,
           const env::Environment& env) {
  std::string value;
  std::string source;
  if (auto it = settings.find(var.name); it != settings.end()) {
    value = it->second.value;
    source = it->second.source;
  } else {
    env::Lookup lookup = env.Get(var.name);
    value = lookup.value;
    source = lookup.is_default ? "default" : "environment variable " + lookup.source;
  }
  if (value.empty()) value = "(unset)";
  const std::string alias = var.horovod_alias[0] != '\0' ? var.horovod_alias : "-";
  return {var.name, alias, value, source, var.help};
}

}  // namespace

std::string FormatConfigTable(const std::map<std::string, Setting>& settings,
                              const env::Environment& env) {
  std::vector<Row> rows = {{"VARIABLE", "HOROVOD ALIAS", "VALUE", "SOURCE", "DESCRIPTION"}};
  for (const env::VarSpec& var : env::AllVars()) rows.push_back(RowFor(var, settings, env));
  std::array<size_t, kColumns> width{};
  for (const Row& row : rows) {
    for (size_t c = 0; c < kColumns; ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const Row& row : rows) {
    std::string line;
    for (size_t c = 0; c + 1 < kColumns; ++c) {
      line += row[c] + std::string(width[c] - row[c].size() + 2, ' ');
    }
    line += row[kColumns - 1];
    out += line + "\n";
  }
  return out;
}

}  // namespace hvd::cmd
