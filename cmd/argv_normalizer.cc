#include "cmd/argv_normalizer.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

namespace hvd::cmd {
namespace {

struct Spelling {
  std::string text;
  size_t shape;
};

// One option occurrence: which shape and the value written as "--opt=value" or "-pVALUE".
struct Match {
  size_t shape;
  std::string spelled;  // what the user typed, for messages
  std::optional<std::string> attached;
};

std::vector<Spelling> AllSpellings(const std::vector<OptionShape>& shapes) {
  std::vector<Spelling> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    out.push_back({shapes[i].canonical, i});
    for (const auto& a : shapes[i].aliases) out.push_back({a, i});
  }
  return out;
}

std::optional<size_t> Exact(const std::vector<Spelling>& spellings, std::string_view name) {
  for (const auto& s : spellings) {
    if (s.text == name) return s.shape;
  }
  return std::nullopt;
}

// "--name[=value]": exact spellings only. Unlike argparse, a long option is never matched by
// a prefix: an abbreviation silently changes meaning when a flag is added (horovodrun read
// "--elastic" as "--elastic-timeout"). The error suggests the options the prefix would have
// named, so a typed abbreviation is easy to fix.
Result<Match> MatchLong(const std::vector<Spelling>& spellings, const std::string& token) {
  size_t eq = token.find('=');
  std::string name = token.substr(0, eq);
  std::optional<std::string> attached;
  if (eq != std::string::npos) attached = token.substr(eq + 1);
  if (auto shape = Exact(spellings, name)) return Match{*shape, name, attached};

  std::set<std::string> candidates;
  for (const auto& s : spellings) {
    if (name.size() > 2 && s.text.starts_with("--") && s.text.starts_with(name)) {
      candidates.insert(s.text);
    }
  }
  std::string message = "unrecognized argument: " + name;
  if (!candidates.empty()) {
    std::string list;
    for (const auto& c : candidates) list += (list.empty() ? "" : ", ") + c;
    message += " (long options are never abbreviated; did you mean " +
               std::string(candidates.size() == 1 ? "" : "one of ") + list + "?)";
  }
  return Status::InvalidArgument(message);
}

// "-np", "-np=4", "-p22", "-p 22".
Result<Match> MatchSingleDash(const std::vector<Spelling>& spellings,
                              const std::vector<OptionShape>& shapes, const std::string& token) {
  if (auto shape = Exact(spellings, token)) return Match{*shape, token, std::nullopt};
  size_t eq = token.find('=');
  if (eq != std::string::npos) {
    std::string name = token.substr(0, eq);
    if (auto shape = Exact(spellings, name)) return Match{*shape, name, token.substr(eq + 1)};
  }
  std::string letter = token.substr(0, 2);
  if (auto shape = Exact(spellings, letter); shape && shapes[*shape].arity == 1) {
    return Match{*shape, letter, token.substr(2)};
  }
  return Status::InvalidArgument("unrecognized argument: " + token);
}

// Appends the canonical form of `m` to `out`, consuming values from argv at *next.
Status Emit(const Match& m, const OptionShape& shape, const std::vector<std::string>& argv,
            size_t* next, std::vector<std::string>* out) {
  const std::string where = "argument " + m.spelled;
  if (shape.arity == 0) {
    if (m.attached) {
      return Status::InvalidArgument(where + ": ignored explicit argument '" + *m.attached + "'");
    }
    out->push_back(shape.canonical);
    return Status::OK();
  }
  if (shape.arity == 1) {
    std::string value;
    if (m.attached) {
      value = *m.attached;
    } else if (*next < argv.size()) {
      value = argv[(*next)++];
    } else {
      return Status::InvalidArgument(where + ": expected one argument");
    }
    out->push_back(shape.canonical + "=" + value);
    return Status::OK();
  }
  const std::string expected = where + ": expected " + std::to_string(shape.arity) + " arguments";
  if (m.attached || *next + static_cast<size_t>(shape.arity) > argv.size()) {
    return Status::InvalidArgument(expected);
  }
  std::string joined;
  for (int i = 0; i < shape.arity; ++i) {
    const std::string& v = argv[(*next)++];
    if (v.find(',') != std::string::npos)
      return Status::InvalidArgument(expected + ", got '" + v + "'");
    joined += (i == 0 ? "" : ",") + v;
  }
  out->push_back(shape.canonical + "=" + joined);
  return Status::OK();
}

bool IsOptionLike(const std::string& token) { return token.size() > 1 && token[0] == '-'; }

}  // namespace

Result<NormalizedArgv> NormalizeArgv(const std::vector<std::string>& argv,
                                     const std::vector<OptionShape>& shapes) {
  const std::vector<Spelling> spellings = AllSpellings(shapes);
  NormalizedArgv out;
  size_t i = 0;
  while (i < argv.size()) {
    const std::string& token = argv[i];
    if (token == "--") {
      ++i;
      break;
    }
    if (!IsOptionLike(token)) break;
    ++i;
    Result<Match> m = token.starts_with("--") ? MatchLong(spellings, token)
                                              : MatchSingleDash(spellings, shapes, token);
    if (!m.ok()) return m.status();
    HVD_RETURN_IF_ERROR(Emit(*m, shapes[m->shape], argv, &i, &out.options));
  }
  out.command.assign(argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
  return out;
}

}  // namespace hvd::cmd
