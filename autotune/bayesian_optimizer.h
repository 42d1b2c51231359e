#ifndef HVD_AUTOTUNE_BAYESIAN_OPTIMIZER_H_
#define HVD_AUTOTUNE_BAYESIAN_OPTIMIZER_H_

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "autotune/gaussian_process.h"

// Bayesian optimisation of a noisy black-box score over a box (Horovod:
// horovod/common/optim/bayesian_optimization.cc). The caller alternates NextSample() ->
// measure -> AddSample(). Scores are MAXIMISED.
//
// Inputs are scaled to [0, 1]^d internally. NextSample() fits a Gaussian process to all
// samples and returns the maximiser of Expected Improvement
//   EI(x) = (mu(x) - mu* - xi) Phi(Z) + sigma(x) phi(Z),  Z = (mu(x) - mu* - xi) / sigma(x)
// where mu* is the best posterior mean at the sampled points and xi is in units of the
// normalised score. EI is maximised by simplex searches started from `kRandomStarts`
// uniform points plus the best few of `kCandidates` uniform candidates. With no samples
// yet, NextSample() returns a uniform random point.
//
// All randomness comes from a std::mt19937_64 seeded in the constructor, so the same
// seed and the same AddSample() sequence give the same proposals. Not synchronized.
namespace hvd::autotune {

class BayesianOptimizer {
 public:
  static constexpr int kRandomStarts = 25;
  static constexpr int kCandidates = 1000;
  static constexpr int kCandidateStarts = 5;

  struct Sample {
    std::vector<double> x;  // in the caller's units
    double y = 0.0;
  };

  // bounds: one (low, high) pair per dimension, low < high. noise: the GP's alpha.
  BayesianOptimizer(std::vector<std::pair<double, double>> bounds, double noise, uint64_t seed,
                    double xi = 0.01);

  // Records a measured score. x must have one value per dimension; values outside the
  // bounds are clamped.
  void AddSample(const std::vector<double>& x, double y);

  // The next point to measure, inside the bounds.
  std::vector<double> NextSample();

  // The sample with the highest observed y, if any.
  std::optional<Sample> best() const;
  const std::vector<Sample>& samples() const { return samples_; }
  size_t dimensions() const { return bounds_.size(); }

  // Expected improvement at `x` (caller's units) under the current fit, in score units.
  // Fits the model first if samples changed since the last fit. Exposed for tests.
  double ExpectedImprovement(const std::vector<double>& x);

 private:
  Eigen::VectorXd ToUnit(const std::vector<double>& x) const;
  std::vector<double> FromUnit(const Eigen::VectorXd& u) const;
  Eigen::VectorXd RandomUnitPoint();
  void FitIfStale();
  double ExpectedImprovementUnit(const Eigen::VectorXd& u) const;

  std::vector<std::pair<double, double>> bounds_;
  double xi_;
  std::mt19937_64 rng_;
  GaussianProcess gp_;
  std::vector<Sample> samples_;
  Eigen::MatrixXd unit_x_;  // samples in [0,1]^d, one per row
  bool stale_ = true;
  double best_mean_ = 0.0;  // mu*: best posterior mean at the sampled points
};

}  // namespace hvd::autotune

#endif  // HVD_AUTOTUNE_BAYESIAN_OPTIMIZER_H_
