#include "cmd/check_build.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hvd::cmd {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CheckBuildTest, HorovodLayout) {
  const std::string text = CheckBuildText();
  EXPECT_THAT(text, StartsWith("hvd v"));
  EXPECT_THAT(text, HasSubstr("\n\nAvailable Frameworks:\n    [ ] TensorFlow\n    ["));
  EXPECT_THAT(text, ContainsRegex("\n    \\[[X ]\\] PyTorch\n    \\[ \\] MXNet\n\n"));
  EXPECT_THAT(text,
              ContainsRegex("Available Controllers:\n    \\[[X ]\\] MPI\n    \\[[X ]\\] Gloo\n"));
  EXPECT_THAT(text,
              ContainsRegex("Available Tensor Operations:\n    \\[[X ]\\] NCCL\n    \\[ \\] "
                            "DDL\n    \\[ \\] CCL\n    \\[[X ]\\] MPI\n    \\[[X ]\\] Gloo\n"));
}

TEST(CheckBuildTest, Version) { EXPECT_THAT(VersionText(), StartsWith("hvdrun ")); }

}  // namespace
}  // namespace hvd::cmd
