#include "test/unit/cmd/parse_helpers.h"

#include <gtest/gtest.h>

namespace hvd::cmd::testing {

ParsedCommandLine MustParse(const std::vector<std::string>& argv,
                            const std::map<std::string, std::string>& env) {
  Result<ParsedCommandLine> r = ParseCommandLine(argv, env::Environment::FromMap(env));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ParsedCommandLine{};
}

std::string ParseError(const std::vector<std::string>& argv,
                       const std::map<std::string, std::string>& env) {
  Result<ParsedCommandLine> r = ParseCommandLine(argv, env::Environment::FromMap(env));
  EXPECT_FALSE(r.ok()) << "parse unexpectedly succeeded";
  return r.ok() ? "" : r.status().message();
}

}  // namespace hvd::cmd::testing
