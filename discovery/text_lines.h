#ifndef HVD_DISCOVERY_TEXT_LINES_H_
#define HVD_DISCOVERY_TEXT_LINES_H_

#include <string>
#include <string_view>
#include <vector>

namespace hvd::discovery {

// One line of a line-oriented input (hostfile, discovery-script output, LSF host file).
// `text` excludes the line terminator ("\n" or "\r\n") and views the caller's buffer.
struct TextLine {
  int number = 0;  // 1-based
  std::string_view text;
};

// Splits `text` into lines; a final line without a terminator counts, an empty tail does not.
std::vector<TextLine> SplitLines(std::string_view text);

// True for the whitespace the parsers skip: space, tab, '\r', '\v', '\f'.
bool IsSpace(char c);

// `text` without leading and trailing whitespace.
std::string_view Trim(std::string_view text);

// Splits `text` at runs of whitespace; each token keeps its 0-based offset in `text`.
struct Token {
  size_t offset = 0;
  std::string_view text;
};
std::vector<Token> SplitWhitespace(std::string_view text);

// "'text'", the quoting every discovery error uses for input it repeats.
std::string Quote(std::string_view text);

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_TEXT_LINES_H_
