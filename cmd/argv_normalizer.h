#ifndef HVD_CMD_ARGV_NORMALIZER_H_
#define HVD_CMD_ARGV_NORMALIZER_H_

#include <string>
#include <vector>

#include "common/status.h"

// The argv step that runs before CLI11: it gives hvdrun argparse's (horovodrun's) spelling
// rules, which CLI11 does not have, and splits off the command.
//
//  - single-dash multi-letter options (-np, -cb, -hostfile, -prefix-timestamp);
//  - long options only by their exact spellings: never by a prefix, unlike argparse (an
//    abbreviation is an "unrecognized argument" error that suggests the full spellings);
//  - the command starts at the first token that is not an option or an option's value, or
//    after "--"; nothing after that point is looked at, so the command keeps its own flags.
//
// The options handed to CLI11 come out in one canonical form: "--long-name" for flags,
// "--long-name=value" for one value, "--long-name=a,b" for two values (CLI11 splits them on
// ','), so that values starting with '-' are never mistaken for options.
namespace hvd::cmd {

// How one option is spelled and how many values follow it.
struct OptionShape {
  std::string canonical;             // long spelling CLI11 knows, e.g. "--num-proc"
  std::vector<std::string> aliases;  // other exact spellings: "-np", "--min-np", "-p"
  int arity = 0;                     // values after the option: 0, 1 or 2
};

struct NormalizedArgv {
  std::vector<std::string> options;  // canonical tokens for CLI11, in order
  std::vector<std::string> command;  // program and its arguments, untouched
};

// `argv` excludes the program name. Errors name the offending token, e.g.
// "unrecognized argument: --foo" or "unrecognized argument: --hier (long options are never
// abbreviated; did you mean one of --hierarchical-allgather, --hierarchical-allreduce?)"; a
// mistyped spelling gets its likely option ("--np (did you mean -np?)", "--hostfle"), and
// mpirun's or torchrun's options hvdrun's way of doing it ("-x (mpirun's; hvdrun passes its
// environment on ...)").
Result<NormalizedArgv> NormalizeArgv(const std::vector<std::string>& argv,
                                     const std::vector<OptionShape>& shapes);

}  // namespace hvd::cmd

#endif  // HVD_CMD_ARGV_NORMALIZER_H_
