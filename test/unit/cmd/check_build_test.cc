#include "cmd/check_build.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hvd::cmd {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Box(bool built, const char* name) {
  return std::string("    [") + (built ? "X" : " ") + "] " + name + "\n";
}

TEST(CheckBuildTest, ReportsExactlyWhatThisBuildContains) {
  // Given this build's configuration (CMake passes it in), -cb prints Horovod's layout with
  // an X exactly where the backend is compiled in (PyTorch: where the interpreter hvd.torch is
  // built for imports torch); the Gloo controller, hvd's own rendezvous, in every build.
  const std::string text = CheckBuildText();
  EXPECT_THAT(text, StartsWith("hvd v"));
  EXPECT_THAT(text, HasSubstr("\n\nAvailable Frameworks:\n" + Box(false, "TensorFlow") +
                              Box(HVD_EXPECT_PYTHON, "PyTorch") + Box(false, "MXNet") + "\n"));
  EXPECT_THAT(text, HasSubstr("Available Controllers:\n" + Box(HVD_EXPECT_MPI, "MPI") +
                              Box(true, "Gloo") + "\n"));
  EXPECT_THAT(text, HasSubstr("Available Tensor Operations:\n" + Box(HVD_EXPECT_NCCL, "NCCL") +
                              Box(false, "DDL") + Box(false, "CCL") + Box(HVD_EXPECT_MPI, "MPI") +
                              Box(HVD_EXPECT_GLOO, "Gloo")));
}

TEST(CheckBuildTest, TheGlooControllerIsTickedInABuildWithoutLibgloo) {
  // Given a build without libgloo (-DHVD_WITH_GLOO=OFF) and without torch, MPI or NCCL
  const std::string text = CheckBuildText({false, false, false, false});
  // Then its jobs still run on the Gloo controller (hvd's rendezvous), but not Gloo's ops
  EXPECT_THAT(text, HasSubstr("Available Controllers:\n" + Box(false, "MPI") + Box(true, "Gloo")));
  EXPECT_THAT(text, HasSubstr(Box(false, "CCL") + Box(false, "MPI") + Box(false, "Gloo")));
  EXPECT_THAT(text, HasSubstr(Box(false, "PyTorch")));
}

TEST(CheckBuildTest, Version) { EXPECT_THAT(VersionText(), StartsWith("hvdrun ")); }

}  // namespace
}  // namespace hvd::cmd
