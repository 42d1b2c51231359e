#include "autotune/box_minimizer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hvd::autotune {
namespace {

struct BoxCase {
  const char* name;
  Eigen::Vector2d minimum;   // unconstrained minimiser of (x-a)^2 + 10 (y-b)^2
  Eigen::Vector2d expected;  // minimiser inside the unit box
};

TEST(BoxMinimizerTest, FindsTheConstrainedMinimumOfAQuadratic) {
  const BoxCase cases[] = {
      {"interior", {0.3, 0.7}, {0.3, 0.7}},
      {"outside on x", {1.5, 0.2}, {1.0, 0.2}},
      {"outside corner", {-1.0, -2.0}, {0.0, 0.0}},
  };
  for (const BoxCase& c : cases) {
    SCOPED_TRACE(c.name);
    // Given a convex quadratic and the unit box
    auto f = [&](const Eigen::VectorXd& x) {
      return std::pow(x[0] - c.minimum[0], 2) + 10 * std::pow(x[1] - c.minimum[1], 2);
    };
    int evaluations_outside = 0;
    auto counted = [&](const Eigen::VectorXd& x) {
      if ((x.array() < 0).any() || (x.array() > 1).any()) ++evaluations_outside;
      return f(x);
    };
    // When minimising from the centre
    MinimizeOptions options;
    options.max_evaluations = 400;
    MinimizeResult r = MinimizeInBox(counted, Eigen::Vector2d(0.5, 0.5), Eigen::Vector2d::Zero(),
                                     Eigen::Vector2d::Ones(), options);
    // Then it lands on the box-constrained minimiser and never leaves the box
    EXPECT_NEAR(r.x[0], c.expected[0], 1e-3);
    EXPECT_NEAR(r.x[1], c.expected[1], 1e-3);
    EXPECT_EQ(evaluations_outside, 0);
    EXPECT_LE(r.evaluations, options.max_evaluations + 2);
  }
}

}  // namespace
}  // namespace hvd::autotune
