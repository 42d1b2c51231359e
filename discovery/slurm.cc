#include "discovery/slurm.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "discovery/host_slots.h"
#include "discovery/text_lines.h"

namespace hvd::discovery {
namespace {

// hvdrun starts one hvd-agent per node, so a list naming more nodes than any job can use is
// refused before its names are built: at the earlier cap of 1,000,000, 200-character names
// took 200 MB and two seconds to expand (found by the fuzz target "slurm").
constexpr size_t kMaxExpandedHosts = 65536;

// "Slurm node list '<list>', column N: ". Built only for an error: quoting the whole list at
// every item made a long list quadratic (fuzz target "slurm").
std::string Where(std::string_view nodelist, size_t offset) {
  return "Slurm node list " + Quote(nodelist) + ", column " + std::to_string(offset + 1) + ": ";
}

std::string TooMany() {
  return "expands to more than " + std::to_string(kMaxExpandedHosts) + " names";
}

// Parses a non-negative decimal integer occupying all of `text`.
std::optional<long long> ParseCount(std::string_view text) {
  if (text.empty() ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Expands the inside of one bracket group ("01-04,07") into its strings. `offset` is the
// group's 0-based position in `nodelist`, for errors.
Result<std::vector<std::string>> ExpandGroup(std::string_view group, std::string_view nodelist,
                                             size_t offset) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= group.size()) {
    size_t end = std::min(group.find(',', start), group.size());
    std::string_view range = group.substr(start, end - start);
    auto where = [&] { return Where(nodelist, offset + start); };
    size_t dash = range.find('-');
    std::string_view lo_text = range.substr(0, dash);
    std::string_view hi_text = dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
    std::optional<long long> lo = ParseCount(lo_text);
    std::optional<long long> hi = ParseCount(hi_text);
    if (!lo || !hi) {
      return Status::InvalidArgument(where() + "range " + Quote(range) +
                                     " is not 'N' or 'N-M' with non-negative integers");
    }
    if (lo_text.size() > kMaxHostNameLength || hi_text.size() > kMaxHostNameLength) {
      return Status::InvalidArgument(where() + "range " + Quote(range) +
                                     " is longer than a host name");
    }
    if (*hi < *lo) {
      return Status::InvalidArgument(where() + "range " + Quote(range) + " is descending");
    }
    if (static_cast<size_t>(*hi - *lo) + out.size() >= kMaxExpandedHosts) {
      return Status::InvalidArgument(where() + "range " + Quote(range) + " is too large");
    }
    // Counted from lo: `i <= hi` never ends for hi = LLONG_MAX (i wraps), and the names filled
    // memory until hvdrun died (until 2026-12-01).
    for (long long n = 0; n <= *hi - *lo; ++n) {
      std::string digits = std::to_string(*lo + n);
      if (digits.size() < lo_text.size()) digits.insert(0, lo_text.size() - digits.size(), '0');
      out.push_back(std::move(digits));
    }
    start = end + 1;
  }
  return out;
}

// Expands one top-level item ("r[1-2]n[01-02]") starting at `offset` in `nodelist`.
Result<std::vector<std::string>> ExpandItem(std::string_view item, std::string_view nodelist,
                                            size_t offset) {
  std::vector<std::string> names = {""};
  size_t longest = 0;  // of `names`; checked before each piece is appended to every name
  size_t i = 0;
  while (i < item.size()) {
    auto where = [&] { return Where(nodelist, offset + i); };
    auto too_long = [&] {
      return Status::InvalidArgument(where() + "item " + Quote(item) +
                                     " makes host names longer than " +
                                     std::to_string(kMaxHostNameLength) + " characters");
    };
    if (item[i] == ']') return Status::InvalidArgument(where() + "unmatched ']'");
    if (item[i] != '[') {
      size_t next = std::min(item.find_first_of("[]", i), item.size());
      longest += next - i;
      if (longest > kMaxHostNameLength) return too_long();
      for (std::string& name : names) name.append(item.substr(i, next - i));
      i = next;
      continue;
    }
    size_t close = item.find(']', i);
    size_t nested = item.find('[', i + 1);
    if (close == std::string_view::npos) return Status::InvalidArgument(where() + "unmatched '['");
    if (nested < close) return Status::InvalidArgument(where() + "nested '['");
    HVD_ASSIGN_OR_RETURN(std::vector<std::string> group,
                         ExpandGroup(item.substr(i + 1, close - i - 1), nodelist, offset + i + 1));
    if (names.size() * group.size() > kMaxExpandedHosts) {
      return Status::InvalidArgument(where() + TooMany());
    }
    size_t widest = 0;
    for (const std::string& suffix : group) widest = std::max(widest, suffix.size());
    longest += widest;
    if (longest > kMaxHostNameLength) return too_long();
    std::vector<std::string> product;
    product.reserve(names.size() * group.size());
    for (const std::string& prefix : names) {
      for (const std::string& suffix : group) product.push_back(prefix + suffix);
    }
    names = std::move(product);
    i = close + 1;
  }
  return names;
}

}  // namespace

Result<std::vector<std::string>> ExpandSlurmHostlist(std::string_view nodelist) {
  if (Trim(nodelist).empty()) {
    return Status::InvalidArgument("Slurm node list " + Quote(nodelist) + " is empty");
  }
  std::vector<std::string> hosts;
  size_t start = 0;
  while (start <= nodelist.size()) {
    // Items end at a comma outside brackets.
    size_t end = start;
    int depth = 0;
    while (end < nodelist.size() && (nodelist[end] != ',' || depth > 0)) {
      depth += nodelist[end] == '[' ? 1 : nodelist[end] == ']' ? -1 : 0;
      ++end;
    }
    std::string_view raw = nodelist.substr(start, end - start);
    std::string_view item = Trim(raw);
    size_t offset = start + (item.empty() ? 0 : static_cast<size_t>(item.data() - raw.data()));
    auto where = [&] { return Where(nodelist, offset); };
    if (item.empty()) return Status::InvalidArgument(where() + "empty item (stray ',')");
    HVD_ASSIGN_OR_RETURN(std::vector<std::string> names, ExpandItem(item, nodelist, offset));
    for (std::string& name : names) {
      Status valid = ValidateHostName(name);
      if (!valid.ok()) return valid.WithContext(where() + "item " + Quote(item));
      if (hosts.size() >= kMaxExpandedHosts) return Status::InvalidArgument(where() + TooMany());
      hosts.push_back(std::move(name));
    }
    start = end + 1;
  }
  return hosts;
}

Result<std::vector<int>> ParseSlurmTasksPerNode(std::string_view text) {
  std::vector<int> counts;
  if (Trim(text).empty()) {
    return Status::InvalidArgument("SLURM_TASKS_PER_NODE " + Quote(text) + " is empty");
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(',', start), text.size());
    std::string_view item = Trim(text.substr(start, end - start));
    auto where = [&] {
      return "SLURM_TASKS_PER_NODE " + Quote(text) + ", column " + std::to_string(start + 1) + ": ";
    };
    std::string_view count_text = item;
    std::string_view repeat_text = "1";
    size_t paren = item.find('(');
    if (paren != std::string_view::npos) {
      count_text = item.substr(0, paren);
      std::string_view suffix = item.substr(paren);
      if (suffix.size() < 4 || suffix.substr(0, 2) != "(x" || suffix.back() != ')') {
        return Status::InvalidArgument(where() + "expected 'N' or 'N(xM)', got " + Quote(item));
      }
      repeat_text = suffix.substr(2, suffix.size() - 3);
    }
    std::optional<long long> count = ParseCount(count_text);
    std::optional<long long> repeat = ParseCount(repeat_text);
    if (!count || !repeat || *count > kMaxSlots || *repeat < 1 ||
        *repeat + counts.size() > kMaxExpandedHosts) {
      return Status::InvalidArgument(
          where() + "expected 'N' or 'N(xM)' with N >= 0 and M >= 1, got " + Quote(item));
    }
    counts.insert(counts.end(), static_cast<size_t>(*repeat), static_cast<int>(*count));
    start = end + 1;
  }
  return counts;
}

namespace {

// Reads an optional positive integer variable; errors name the variable and its value.
Result<std::optional<int>> PositiveVar(const env::Environment& env, std::string_view name) {
  std::optional<std::string> value = env.Raw(name);
  if (!value.has_value()) return std::optional<int>();
  Result<int> parsed = ParseSlotCount(Trim(*value), "value");
  if (!parsed.ok()) return parsed.status().WithContext(std::string(name) + "=" + Quote(*value));
  return std::optional<int>(*parsed);
}

}  // namespace

Result<std::optional<Allocation>> SlurmAllocation(const env::Environment& env) {
  std::string nodelist_var = "SLURM_JOB_NODELIST";
  std::optional<std::string> nodelist = env.Raw(nodelist_var);
  if (!nodelist.has_value()) {
    nodelist_var = "SLURM_NODELIST";
    nodelist = env.Raw(nodelist_var);
  }
  if (!nodelist.has_value()) return std::optional<Allocation>();
  Result<std::vector<std::string>> names = ExpandSlurmHostlist(*nodelist);
  if (!names.ok()) return names.status().WithContext(nodelist_var);

  std::vector<int> slots(names->size(), 1);
  if (std::optional<std::string> tasks = env.Raw("SLURM_TASKS_PER_NODE")) {
    HVD_ASSIGN_OR_RETURN(slots, ParseSlurmTasksPerNode(*tasks));
    if (slots.size() != names->size()) {
      return Status::InvalidArgument("SLURM_TASKS_PER_NODE=" + Quote(*tasks) + " gives " +
                                     std::to_string(slots.size()) + " task counts but " +
                                     nodelist_var + "=" + Quote(*nodelist) + " expands to " +
                                     std::to_string(names->size()) + " nodes");
    }
  }
  Allocation allocation;
  allocation.source = "Slurm allocation (" + nodelist_var + "=" + *nodelist + ")";
  std::set<std::string, std::less<>> seen;
  for (size_t i = 0; i < names->size(); ++i) {
    if (!seen.insert((*names)[i]).second) {
      return Status::InvalidArgument(nodelist_var + "=" + Quote(*nodelist) + " names node " +
                                     Quote((*names)[i]) + " twice");
    }
    if (slots[i] > 0) allocation.hosts.push_back({(*names)[i], slots[i], std::nullopt});
  }
  if (allocation.hosts.empty()) {
    return Status::InvalidArgument(allocation.source + " has no node with tasks");
  }
  HVD_ASSIGN_OR_RETURN(allocation.num_proc, PositiveVar(env, "SLURM_NTASKS"));
  if (!allocation.num_proc.has_value()) {
    HVD_ASSIGN_OR_RETURN(allocation.num_proc, PositiveVar(env, "SLURM_NPROCS"));
  }
  return std::optional<Allocation>(std::move(allocation));
}

}  // namespace hvd::discovery
