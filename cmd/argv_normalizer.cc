#include "cmd/argv_normalizer.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "common/edit_distance.h"

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

// A spelling without its leading dashes, '_' read as '-', in lower case: "--Fusion_Threshold"
// and "-np" compare as "fusion-threshold" and "np".
std::string Bare(std::string_view spelling) {
  while (!spelling.empty() && spelling.front() == '-') spelling.remove_prefix(1);
  std::string out(spelling);
  for (char& c : out) {
    c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// The spellings a mistyped `name` most likely meant, one per option: the same letters with
// other dashes, '_' for '-' or another case ("--np", "--fusion_threshold_mb"), else the nearest
// by one edit (two from 8 letters on: "--fusion-treshold-mb", "--hostfle"). Names of fewer than
// 4 letters get no guess by edits ("-x" is one edit from -v, -p, -i and -H). Of an option's
// spellings, the one with as many dashes as `name` is shown, else its canonical one.
std::vector<std::string> Guesses(const std::vector<Spelling>& spellings, std::string_view name) {
  const std::string bare = Bare(name);
  if (bare.empty()) return {};
  const bool single_dash = !name.starts_with("--");
  const size_t limit = bare.size() < 4 ? 0 : bare.size() < 8 ? 1 : 2;
  size_t best = SIZE_MAX;
  std::vector<const Spelling*> found;
  for (const Spelling& s : spellings) {
    const std::string other = Bare(s.text);
    const size_t cost = EditDistance(bare, other, limit);
    if (cost > limit) continue;
    if (cost < best) {
      best = cost;
      found.clear();
    }
    if (cost == best) found.push_back(&s);
  }
  std::vector<std::string> out;
  std::set<size_t> shapes;
  for (const Spelling* s : found) {
    if (!shapes.insert(s->shape).second) continue;
    const Spelling* shown = s;
    for (const Spelling* t : found) {
      if (t->shape == s->shape && t->text.starts_with("--") == !single_dash) shown = t;
    }
    out.push_back(shown->text);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// " (did you mean --a?)", " (did you mean one of --a, --b?)", or "".
std::string DidYouMean(const std::vector<std::string>& guesses) {
  if (guesses.empty() || guesses.size() > 3) return "";
  return " (did you mean " + GuessList(guesses) + "?)";
}

// Other launchers' options that users of mpirun and torchrun type out of habit, and what hvdrun
// does in their place (hvdrun's own spellings are never here).
struct ForeignOption {
  std::vector<std::string_view> spellings;
  std::string_view hint;
};

const std::vector<ForeignOption>& ForeignOptions() {
  static const std::vector<ForeignOption> kOptions = {
      {{"-n", "-c"}, "mpirun's; hvdrun's is -np N"},
      {{"--host"}, "mpirun's; hvdrun's is -H/--hosts a:4,b:4"},
      {{"-N", "-npernode", "--npernode", "-ppn"},
       "ranks per host (mpirun's); hvdrun takes each host's slots, -H a:4,b:4"},
      {{"--nproc-per-node", "--nproc_per_node"},
       "torchrun's; hvdrun's is -np N on this machine, or -H a:4,b:4 for every host at once"},
      {{"--nnodes", "--node-rank", "--node_rank", "--standalone", "--rdzv-backend",
        "--rdzv_backend", "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id", "--rdzv_id"},
       "torchrun's; hvdrun starts every host's ranks from one command, -H a:4,b:4, with "
       "nothing to set up for the rendezvous"},
      {{"--master-addr", "--master_addr", "--master-port", "--master_port"},
       "torchrun's; export MASTER_ADDR / MASTER_PORT, which hvdrun gives every rank as they are"},
      {{"-x"},
       "mpirun's; hvdrun passes its environment on to every rank: export the variable before "
       "running hvdrun"},
      {{"--map-by", "-map-by", "--bind-to-core", "--report-bindings", "-report-bindings",
        "--oversubscribe", "-oversubscribe", "-mca", "--mca", "--tag-output", "--allow-run-as-root",
        "--timestamp-output"},
       "mpirun's; under --mpi, --mpi-args \"...\" passes options on to mpirun, which already "
       "gets --tag-output and, as root, --allow-run-as-root"},
  };
  return kOptions;
}

// " (mpirun's; hvdrun's is -np N)" for another launcher's option, else "".
std::string ForeignHint(std::string_view name) {
  for (const ForeignOption& option : ForeignOptions()) {
    for (std::string_view spelling : option.spellings) {
      if (spelling == name) return " (" + std::string(option.hint) + ")";
    }
  }
  return "";
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
  if (std::string hint = ForeignHint(name); !hint.empty()) {
    message += hint;
  } else if (!candidates.empty()) {
    message += " (long options are never abbreviated; did you mean " +
               GuessList({candidates.begin(), candidates.end()}) + "?)";
  } else {
    message += DidYouMean(Guesses(spellings, name));
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
  const std::string name = token.substr(0, std::min(token.find('='), token.size()));
  // "-ppn 4" is MPICH's ranks per node, not -p with "pn" attached
  if (std::string hint = ForeignHint(name); !hint.empty()) {
    return Status::InvalidArgument("unrecognized argument: " + token + hint);
  }
  std::string letter = token.substr(0, 2);
  if (auto shape = Exact(spellings, letter); shape && shapes[*shape].arity == 1) {
    return Match{*shape, letter, token.substr(2)};
  }
  return Status::InvalidArgument("unrecognized argument: " + token +
                                 DidYouMean(Guesses(spellings, name)));
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
    if (value.empty()) {
      // CLI11 reads "--opt=" as the option without its value and takes the next argument for
      // it ("--mpi-args= -np 2" lost -np); as two words the empty value is the value.
      out->push_back(shape.canonical);
      out->push_back("");
      return Status::OK();
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
