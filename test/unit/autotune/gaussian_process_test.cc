#include "autotune/gaussian_process.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hvd::autotune {
namespace {

Eigen::MatrixXd Column(std::initializer_list<double> values) {
  Eigen::MatrixXd x(static_cast<Eigen::Index>(values.size()), 1);
  Eigen::Index i = 0;
  for (double v : values) x(i++, 0) = v;
  return x;
}

TEST(GaussianProcessTest, NoiselessPosteriorInterpolatesTrainingData) {
  struct Case {
    const char* name;
    double (*f)(double);
  };
  const Case cases[] = {
      {"sine", [](double x) { return std::sin(6.0 * x); }},
      {"offset and scaled", [](double x) { return 1e9 + 3e8 * x * x; }},
      {"constant", [](double) { return 5.0; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // Given noiseless samples of a smooth function
    Eigen::MatrixXd x = Column({0.0, 0.15, 0.4, 0.55, 0.8, 1.0});
    Eigen::VectorXd y(x.rows());
    for (Eigen::Index i = 0; i < x.rows(); ++i) y[i] = c.f(x(i, 0));
    GaussianProcess gp(/*alpha=*/1e-6);
    // When the GP is fitted and asked about the training points
    gp.Fit(x, y);
    Eigen::VectorXd mean;
    Eigen::VectorXd std;
    gp.Predict(x, &mean, &std);
    // Then it reproduces them with (almost) no uncertainty
    const double scale = std::max(1.0, y.cwiseAbs().maxCoeff());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      EXPECT_NEAR(mean[i], y[i], 1e-4 * scale) << "at x=" << x(i, 0);
      EXPECT_LT(std[i], 1e-2 * scale) << "at x=" << x(i, 0);
    }
  }
}

TEST(GaussianProcessTest, UncertaintyGrowsAwayFromData) {
  // Given samples clustered in [0, 0.3]
  Eigen::MatrixXd x = Column({0.0, 0.1, 0.2, 0.3});
  Eigen::VectorXd y(4);
  y << 0.0, 0.5, 0.8, 0.9;
  GaussianProcess gp(1e-3);
  gp.Fit(x, y);
  // When predicting near and far from them
  double near_mean = 0, near_std = 0, far_mean = 0, far_std = 0;
  gp.PredictOne(Eigen::VectorXd::Constant(1, 0.15), &near_mean, &near_std);
  gp.PredictOne(Eigen::VectorXd::Constant(1, 1.0), &far_mean, &far_std);
  // Then the far point is much less certain
  EXPECT_GT(far_std, 5 * near_std);
}

TEST(GaussianProcessTest, FittedHyperparametersBeatTheDefaults) {
  // Given data with a short length scale
  Eigen::MatrixXd x(12, 1);
  Eigen::VectorXd y(12);
  for (int i = 0; i < 12; ++i) {
    x(i, 0) = i / 11.0;
    y[i] = std::sin(20.0 * x(i, 0));
  }
  GaussianProcess gp(1e-3);
  // When fitting
  gp.Fit(x, y);
  // Then the likelihood at the fit is at least as good as at l = sigma_f = 1 and the length
  // scale is short
  EXPECT_LE(gp.NegativeLogMarginalLikelihood(gp.length_scale(), gp.signal_std()),
            gp.NegativeLogMarginalLikelihood(1.0, 1.0));
  EXPECT_LT(gp.length_scale(), 0.3);
}

TEST(GaussianProcessTest, SingleSampleIsSupported) {
  // Given one sample
  GaussianProcess gp(0.8);
  gp.Fit(Column({0.5}), Eigen::VectorXd::Constant(1, 42.0));
  // When predicting at it
  double mean = 0, std = 0;
  gp.PredictOne(Eigen::VectorXd::Constant(1, 0.5), &mean, &std);
  // Then the mean is the sample (y is centred on it)
  EXPECT_NEAR(mean, 42.0, 1e-9);
}

}  // namespace
}  // namespace hvd::autotune
