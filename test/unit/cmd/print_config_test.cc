#include "cmd/print_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "test/support/temp_file.h"
#include "test/unit/cmd/parse_helpers.h"

namespace hvd::cmd {
namespace {

using ::testing::HasSubstr;
using testing::MustParse;
using ::testing::StartsWith;

// The table row whose first column is `var`.
std::string Row(const std::string& table, const std::string& var) {
  std::istringstream in(table);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(var + " ")) return line;
  }
  ADD_FAILURE() << var << " not in table";
  return "";
}

TEST(PrintConfigTest, ShowsWhereEachValueCameFrom) {
  hvd::testing::TempFile file("print.yaml", "params:\n  cycle_time_ms: 5\n");
  const std::map<std::string, std::string> env_vars = {{"HOROVOD_CACHE_CAPACITY", "7"},
                                                       {"HVD_LOG_LEVEL", "info"}};
  ParsedCommandLine p = MustParse({"--print-config", "--fusion-threshold-mb", "10", "--config-file",
                                   file.path(), "--start-timeout", "12"},
                                  env_vars);
  ASSERT_TRUE(p.print_config);
  const std::string table = FormatConfigTable(p.settings, env::Environment::FromMap(env_vars));

  EXPECT_THAT(table, StartsWith("VARIABLE"));
  std::string fusion = Row(table, "HVD_FUSION_THRESHOLD");
  EXPECT_THAT(fusion, HasSubstr("HOROVOD_FUSION_THRESHOLD"));
  EXPECT_THAT(fusion, HasSubstr("10485760"));
  EXPECT_THAT(fusion, HasSubstr("command line"));
  EXPECT_THAT(Row(table, "HVD_CYCLE_TIME"), HasSubstr("5.0  "));
  EXPECT_THAT(Row(table, "HVD_CYCLE_TIME"), HasSubstr("config file " + file.path()));
  EXPECT_THAT(Row(table, "HVD_CACHE_CAPACITY"), HasSubstr("7  "));
  EXPECT_THAT(Row(table, "HVD_CACHE_CAPACITY"),
              HasSubstr("environment variable HOROVOD_CACHE_CAPACITY"));
  EXPECT_THAT(Row(table, "HVD_LOG_LEVEL"), HasSubstr("environment variable HVD_LOG_LEVEL"));
  EXPECT_THAT(Row(table, "HVD_TORUS_ALLREDUCE"), HasSubstr("default"));
  EXPECT_THAT(Row(table, "HVD_START_TIMEOUT"), HasSubstr("12"));
  EXPECT_THAT(Row(table, "HVD_START_TIMEOUT"), HasSubstr("command line"));
  EXPECT_THAT(Row(table, "HVD_AUTOTUNE_CACHE"), HasSubstr("(unset)"));
}

TEST(PrintConfigTest, ListsEveryRegisteredVariableAligned) {
  const std::string table = FormatConfigTable({}, env::Environment::FromMap({}));
  std::istringstream in(table);
  std::string header;
  std::getline(in, header);
  const size_t source_column = header.find("SOURCE");
  ASSERT_NE(source_column, std::string::npos);
  size_t rows = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++rows;
    EXPECT_EQ(line.substr(source_column, 7), "default") << line;
  }
  EXPECT_EQ(rows, env::AllVars().size());
}

}  // namespace
}  // namespace hvd::cmd
