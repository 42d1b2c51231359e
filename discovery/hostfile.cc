#include "discovery/hostfile.h"

#include <map>

#include "discovery/text_file.h"
#include "discovery/text_lines.h"

namespace hvd::discovery {
namespace {

// Where a problem is, compiler style, plus the line itself.
class LineContext {
 public:
  LineContext(std::string_view filename, const TextLine& line) : filename_(filename), line_(line) {}

  Status Error(size_t offset, const std::string& problem) const {
    return Status::InvalidArgument(std::string(filename_) + ":" + std::to_string(line_.number) +
                                   ":" + std::to_string(offset + 1) + ": " + problem +
                                   "; line: " + Quote(line_.text));
  }

 private:
  std::string_view filename_;
  const TextLine& line_;
};

std::string_view StripBrackets(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

// Parses one non-blank line (comment already removed) into `out`.
Status ParseLine(std::string_view content, const LineContext& context, HostSlots& out) {
  std::vector<Token> tokens = SplitWhitespace(content);
  std::string_view host = StripBrackets(tokens[0].text);
  Status name = ValidateHostName(host);
  if (!name.ok()) {
    std::string message(name.message());
    // "host:N" is -H's syntax; a hostfile wants "host slots=N" (which a name with one ':' and a
    // number after it, not an IPv6 address, almost certainly meant).
    size_t colon = host.rfind(':');
    if (colon != std::string_view::npos && host.find(':') == colon &&
        ValidateHostName(host.substr(0, colon)).ok() &&
        ParseSlotCount(host.substr(colon + 1), "slots").ok()) {
      message += " (a hostfile line is '" + std::string(host.substr(0, colon)) +
                 " slots=" + std::string(host.substr(colon + 1)) + "'; 'host:N' is -H's syntax)";
    }
    return context.Error(tokens[0].offset, message);
  }
  out.host = std::string(host);
  // "slots = 2", "slots= 2" and "slots =2" are one key=value each: Horovod's hostfile reader
  // takes what follows the '=' whatever the spaces (they were refused until 2026-12-01).
  std::vector<Token> pairs;
  for (size_t i = 1; i < tokens.size(); ++i) {
    Token token = tokens[i];
    while (i + 1 < tokens.size() &&
           (token.text.back() == '=' || tokens[i + 1].text.front() == '=')) {
      ++i;
      const char* end = tokens[i].text.data() + tokens[i].text.size();
      token.text =
          std::string_view(token.text.data(), static_cast<size_t>(end - token.text.data()));
    }
    pairs.push_back(token);
  }
  bool have_slots = false;
  for (const Token& token : pairs) {
    size_t eq = token.text.find('=');
    if (eq == std::string_view::npos) {
      return context.Error(token.offset,
                           "expected key=value (slots=N or max_slots=N), got " + Quote(token.text));
    }
    std::string_view key = Trim(token.text.substr(0, eq));
    std::string_view value = Trim(token.text.substr(eq + 1));
    bool is_slots = key == "slots";
    bool is_max = key == "max_slots" || key == "max-slots";
    if (!is_slots && !is_max) {
      return context.Error(token.offset,
                           "unknown key " + Quote(key) + " (expected slots or max_slots)");
    }
    if ((is_slots && have_slots) || (is_max && out.max_slots.has_value())) {
      return context.Error(token.offset, "repeated key " + Quote(key));
    }
    Result<int> number = ParseSlotCount(value, key);
    const size_t value_at = token.offset + static_cast<size_t>(value.data() - token.text.data());
    if (!number.ok()) return context.Error(value_at, number.status().message());
    if (is_slots) {
      out.slots = *number;
      have_slots = true;
    } else {
      out.max_slots = *number;
    }
  }
  if (out.max_slots.has_value() && *out.max_slots < out.slots) {
    return context.Error(tokens[0].offset, "max_slots=" + std::to_string(*out.max_slots) +
                                               " is less than slots=" + std::to_string(out.slots));
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<HostSlots>> ParseHostfile(std::string_view text, std::string_view filename) {
  std::vector<HostSlots> hosts;
  std::map<std::string, int, std::less<>> first_line;
  for (const TextLine& line : SplitLines(text)) {
    std::string_view content = line.text.substr(0, line.text.find('#'));
    if (Trim(content).empty()) continue;
    LineContext context(filename, line);
    HostSlots host;
    HVD_RETURN_IF_ERROR(ParseLine(content, context, host));
    auto [it, inserted] = first_line.emplace(host.host, line.number);
    if (!inserted) {
      size_t offset = static_cast<size_t>(Trim(content).data() - content.data());
      return context.Error(offset, "duplicate host " + Quote(host.host) + " (first on line " +
                                       std::to_string(it->second) + ")");
    }
    hosts.push_back(std::move(host));
  }
  if (hosts.empty()) {
    return Status::InvalidArgument("hostfile " + Quote(filename) + " lists no hosts");
  }
  return hosts;
}

Result<std::vector<HostSlots>> ReadHostfile(const std::string& path) {
  HVD_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "hostfile"));
  return ParseHostfile(text, path);
}

}  // namespace hvd::discovery
