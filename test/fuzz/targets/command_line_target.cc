// Target "command_line": hvdrun's arguments (cmd/flags.h, ParseCommandLine), as users, job
// scripts and schedulers' wrappers write them. The input is the words, one per line, parsed with
// an empty environment.
//
// --config-file (in any spelling) is taken out with its value: it is the one flag that reads a
// file while the command line is parsed, and under a fuzzer it would read whatever path a
// mutation names (/dev/zero, a FIFO). Its YAML has a target of its own (config_file).
//
// Invariants: a refusal is a usage error, and it names what it refuses: one of the words given
// (whole or in part, NamesAWord), or it says that the command is missing.
//
// Slow per input (about 30 a second under ASan): CLI11 is header-only, so all of it is
// instrumented, and every input builds hvdrun's whole option table again.
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "cmd/flags.h"
#include "common/check.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

// "--config-file", "-config_file", "--Config-File=x" (the normalizer's spellings of one option).
bool IsConfigFileOption(std::string_view word) {
  if (!word.starts_with("-")) return false;
  word = word.substr(0, word.find('='));
  while (word.starts_with("-")) word.remove_prefix(1);
  std::string bare(word);
  for (char& c : bare) {
    c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return bare == "config-file";
}

// Whether `message` names a word of `words`: the whole word, the option or the value of a
// "--name=value" word, or a value quoted in the message ('...') that is part of a word (the
// value attached to a short option: "-p-cb" gives "--ssh-port: expected an integer, got '-cb'";
// '' for an empty word or value).
bool NamesAWord(const std::string& message, const std::vector<std::string>& words) {
  for (const std::string& word : words) {
    std::vector<std::string_view> parts = {word};
    const size_t eq = word.find('=');
    if (eq != std::string::npos) {
      parts.push_back(std::string_view(word).substr(0, eq));
      parts.push_back(std::string_view(word).substr(eq + 1));
    }
    for (std::string_view part : parts) {
      if (!part.empty() && message.find(part) != std::string::npos) return true;
    }
  }
  // Every pair of quotes, not only adjacent ones: an apostrophe ("the command's program")
  // shifts the pairing.
  for (size_t open = message.find('\''); open != std::string::npos;
       open = message.find('\'', open + 1)) {
    for (size_t close = message.find('\'', open + 1); close != std::string::npos;
         close = message.find('\'', close + 1)) {
      const std::string_view quoted = std::string_view(message).substr(open + 1, close - open - 1);
      for (const std::string& word : words) {
        // '' names an empty word ("the command's program is an empty string (... '' ...)") or
        // value ("-np=": "--num-proc: expected an integer, got ''").
        if (quoted.empty() ? word.empty() || word.ends_with('=')
                           : word.find(quoted) != std::string::npos) {
          return true;
        }
      }
    }
  }
  return false;
}

}  // namespace

std::string FuzzCommandLine(std::string_view input) {
  FuzzInput in(input);
  std::vector<std::string> words;
  bool skip_value = false;
  while (!in.empty()) {
    std::string word(in.Until('\n'));
    if (skip_value) {
      skip_value = false;
      continue;
    }
    if (IsConfigFileOption(word)) {
      skip_value = word.find('=') == std::string::npos;
      continue;
    }
    words.push_back(std::move(word));
  }
  const env::Environment env = env::Environment::FromMap({});

  std::string outcome;
  Result<cmd::ParsedCommandLine> parsed = cmd::ParseCommandLine(words, env);
  Note(&outcome, parsed.status());
  if (!parsed.ok()) {
    const std::string& message = parsed.status().message();
    HVD_CHECK(parsed.status().code() == StatusCode::kInvalidArgument)
        << "a refusal that is not a usage error: " << message;
    HVD_CHECK(!message.empty()) << "a refusal without a message";
    HVD_CHECK(NamesAWord(message, words) || message.starts_with("no command given"))
        << "a refusal naming none of the words given: " << message;
  }
  return outcome;
}

}  // namespace hvd::fuzz
