#include "common/status.h"

#include <gtest/gtest.h>

namespace hvd {
namespace {

TEST(Status, OkIsCheapAndPrintsOk) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.ToString(), "OK");
  EXPECT_TRUE(ok.WithContext("ignored").ok());
}

TEST(Status, ErrorsCarryCodeMessageAndContext) {
  Status s = Status::Timeout("key 'k' was not set");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kTimeout);
  EXPECT_EQ(s.ToString(), "timeout: key 'k' was not set");
  Status c = s.WithContext("kv wait at 127.0.0.1:1");
  EXPECT_EQ(c.code(), StatusCode::kTimeout);
  EXPECT_EQ(c.message(), "kv wait at 127.0.0.1:1: key 'k' was not set");
  EXPECT_STREQ(StatusCodeName(StatusCode::kPermissionDenied), "permission denied");
}

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  HVD_ASSIGN_OR_RETURN(int half, Half(x));
  return Half(half);
}

Status CheckEven(int x) {
  HVD_RETURN_IF_ERROR(Half(x).status());
  return Status::OK();
}

TEST(Result, HoldsValueOrStatusAndMacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "odd: 3");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(5).code(), StatusCode::kInvalidArgument);
}

TEST(ResultDeathTest, ValueOfAnErrorAborts) {
  Result<int> bad = Status::Internal("boom");
  EXPECT_DEATH((void)bad.value(), "boom");
}

}  // namespace
}  // namespace hvd
