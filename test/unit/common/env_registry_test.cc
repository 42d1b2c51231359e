#include "common/env_registry.h"

#include <gtest/gtest.h>

#include <set>

namespace hvd::env {
namespace {

TEST(EnvRegistry, FromMapDefaultsAndRaw) {
  Environment env = Environment::FromMap({{"PATH", "/bin"}});
  EXPECT_EQ(env.Raw("PATH"), "/bin");
  EXPECT_EQ(env.Raw("NOPE"), std::nullopt);
  Lookup l = env.Get("HVD_GLOO_TIMEOUT_SECONDS");
  EXPECT_TRUE(l.is_default);
  EXPECT_EQ(l.source, "default");
  EXPECT_EQ(*env.GetInt("HVD_GLOO_TIMEOUT_SECONDS"), 30);
  EXPECT_FALSE(env.IsSet("HVD_GLOO_TIMEOUT_SECONDS"));
}

TEST(EnvRegistry, HorovodAliasIsReadAndCanonicalWins) {
  Environment alias_only = Environment::FromMap({{"HOROVOD_RANK", "3"}});
  EXPECT_EQ(*alias_only.GetInt("HVD_RANK"), 3);
  EXPECT_EQ(alias_only.Get("HVD_RANK").source, "HOROVOD_RANK");
  EXPECT_TRUE(alias_only.IsSet("HVD_RANK"));

  Environment both = Environment::FromMap({{"HOROVOD_RANK", "3"}, {"HVD_RANK", "5"}});
  EXPECT_EQ(*both.GetInt("HVD_RANK"), 5);
  EXPECT_EQ(both.Get("HVD_RANK").source, "HVD_RANK");
  // Looking up by the alias name finds the same variable.
  EXPECT_EQ(*both.GetInt("HOROVOD_RANK"), 5);
}

TEST(EnvRegistry, BoolParsing) {
  for (const char* yes : {"1", "true", "YES", "On", " 2 "}) {
    EXPECT_TRUE(*Environment::FromMap({{"HVD_ELASTIC", yes}}).GetBool("HVD_ELASTIC")) << yes;
  }
  for (const char* no : {"0", "false", "No", "off"}) {
    EXPECT_FALSE(*Environment::FromMap({{"HVD_ELASTIC", no}}).GetBool("HVD_ELASTIC")) << no;
  }
}

TEST(EnvRegistry, ParseErrorsNameTheVariableAndValue) {
  auto b = Environment::FromMap({{"HOROVOD_ELASTIC", "maybe"}}).GetBool("HVD_ELASTIC");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("HOROVOD_ELASTIC"), std::string::npos);
  EXPECT_NE(b.status().message().find("maybe"), std::string::npos);

  auto i = Environment::FromMap({{"HVD_RANK", "1x"}}).GetInt("HVD_RANK");
  ASSERT_FALSE(i.ok());
  EXPECT_NE(i.status().message().find("HVD_RANK"), std::string::npos);
  EXPECT_NE(i.status().message().find("1x"), std::string::npos);

  EXPECT_FALSE(ParseInt("99999999999999999999", "x").ok());
  EXPECT_FALSE(ParseFloat("1.5.2", "x").ok());
  EXPECT_DOUBLE_EQ(*ParseFloat(" 2.5 ", "x"), 2.5);
}

TEST(EnvRegistry, NamesAreUniqueAndCanonicalIsHvd) {
  std::set<std::string> seen;
  for (const VarSpec& v : AllVars()) {
    EXPECT_EQ(std::string(v.name).rfind("HVD_", 0), 0u) << v.name;
    EXPECT_TRUE(seen.insert(v.name).second) << "duplicate " << v.name;
    if (v.horovod_alias[0] != '\0') {
      EXPECT_TRUE(seen.insert(v.horovod_alias).second) << "duplicate " << v.horovod_alias;
    }
    EXPECT_EQ(FindVar(v.name), &v);
  }
  EXPECT_EQ(FindVar("HVD_NOT_DECLARED"), nullptr);
}

}  // namespace
}  // namespace hvd::env
