#ifndef HVD_TEST_UNIT_CMD_PARSE_HELPERS_H_
#define HVD_TEST_UNIT_CMD_PARSE_HELPERS_H_

#include <map>
#include <string>
#include <vector>

#include "cmd/flags.h"

namespace hvd::cmd::testing {

// ParseCommandLine over an environment map; a failure is a test failure and an empty result.
ParsedCommandLine MustParse(const std::vector<std::string>& argv,
                            const std::map<std::string, std::string>& env = {});

// The error message of a parse that must fail ("" and a test failure if it succeeds).
std::string ParseError(const std::vector<std::string>& argv,
                       const std::map<std::string, std::string>& env = {});

}  // namespace hvd::cmd::testing

#endif  // HVD_TEST_UNIT_CMD_PARSE_HELPERS_H_
