#include "launcher/local/job_timeout.h"

#include <gtest/gtest.h>

#include "launcher/local/stack_dump.h"

namespace hvd::launcher {
namespace {

using Clock = JobTimeout::Clock;
using std::chrono::milliseconds;

TEST(JobTimeoutTest, StacksAtTheLimitThenTheStopAfterTheirWait) {
  // Given a 2.5 s limit from t0
  const Clock::time_point t0 = Clock::now();
  JobTimeout timeout(2.5, t0);
  // Then nothing is due before it, and the loop waits no longer than it
  EXPECT_EQ(timeout.NextDeadline(false), t0 + milliseconds(2500));
  EXPECT_EQ(timeout.Check(t0 + milliseconds(2499), false), JobTimeout::Due::kNothing);
  EXPECT_FALSE(timeout.expired());
  // When it passes: the stacks, once
  const Clock::time_point late = t0 + milliseconds(2600);
  EXPECT_EQ(timeout.Check(late, false), JobTimeout::Due::kStacks);
  EXPECT_TRUE(timeout.expired());
  EXPECT_EQ(timeout.Check(late, false), JobTimeout::Due::kNothing);
  // Then the stop, once, kStackDumpWait later, even if the job is stopping by then
  EXPECT_EQ(timeout.NextDeadline(true), late + kStackDumpWait);
  EXPECT_EQ(timeout.Check(late + kStackDumpWait - milliseconds(1), true),
            JobTimeout::Due::kNothing);
  EXPECT_EQ(timeout.Check(late + kStackDumpWait, true), JobTimeout::Due::kStop);
  EXPECT_EQ(timeout.Check(late + kStackDumpWait, false), JobTimeout::Due::kNothing);
  EXPECT_FALSE(timeout.NextDeadline(false).has_value());
  EXPECT_EQ(timeout.ExpiryLine("rank"),
            "the job ran past --timeout (2.5 s): every rank prints its Python stacks, then the "
            "job is stopped");
}

TEST(JobTimeoutTest, NoLimitOrAJobAlreadyStoppingIsNeverDue) {
  const Clock::time_point t0 = Clock::now();
  JobTimeout none(0, t0);
  EXPECT_FALSE(none.NextDeadline(false).has_value());
  EXPECT_EQ(none.Check(t0 + std::chrono::hours(24), false), JobTimeout::Due::kNothing);
  JobTimeout stopping(1, t0);
  EXPECT_FALSE(stopping.NextDeadline(true).has_value());
  EXPECT_EQ(stopping.Check(t0 + std::chrono::seconds(5), true), JobTimeout::Due::kNothing);
  EXPECT_FALSE(stopping.expired());
}

}  // namespace
}  // namespace hvd::launcher
