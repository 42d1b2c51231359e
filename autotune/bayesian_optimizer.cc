#include "autotune/bayesian_optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "autotune/box_minimizer.h"
#include "common/check.h"

namespace hvd::autotune {
namespace {

// Below this posterior standard deviation (normalised units) a point is treated as known.
constexpr double kMinStd = 1e-12;

double NormalPdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi); }
double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

}  // namespace

BayesianOptimizer::BayesianOptimizer(std::vector<std::pair<double, double>> bounds, double noise,
                                     uint64_t seed, double xi)
    : bounds_(std::move(bounds)), xi_(xi), rng_(seed), gp_(noise) {
  HVD_CHECK(!bounds_.empty()) << "no dimensions";
  for (const auto& [low, high] : bounds_) HVD_CHECK_LT(low, high);
}

Eigen::VectorXd BayesianOptimizer::ToUnit(const std::vector<double>& x) const {
  HVD_CHECK_EQ(x.size(), bounds_.size());
  Eigen::VectorXd u(static_cast<Eigen::Index>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const auto& [low, high] = bounds_[i];
    u[static_cast<Eigen::Index>(i)] = std::clamp((x[i] - low) / (high - low), 0.0, 1.0);
  }
  return u;
}

std::vector<double> BayesianOptimizer::FromUnit(const Eigen::VectorXd& u) const {
  std::vector<double> x(bounds_.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const auto& [low, high] = bounds_[i];
    x[i] = low + std::clamp(u[static_cast<Eigen::Index>(i)], 0.0, 1.0) * (high - low);
  }
  return x;
}

Eigen::VectorXd BayesianOptimizer::RandomUnitPoint() {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Eigen::VectorXd u(static_cast<Eigen::Index>(bounds_.size()));
  for (Eigen::Index i = 0; i < u.size(); ++i) u[i] = uniform(rng_);
  return u;
}

void BayesianOptimizer::AddSample(const std::vector<double>& x, double y) {
  Eigen::VectorXd u = ToUnit(x);
  samples_.push_back({FromUnit(u), y});
  unit_x_.conservativeResize(static_cast<Eigen::Index>(samples_.size()), u.size());
  unit_x_.row(unit_x_.rows() - 1) = u.transpose();
  stale_ = true;
}

void BayesianOptimizer::FitIfStale() {
  if (!stale_) return;
  HVD_CHECK(!samples_.empty()) << "no samples to fit";
  Eigen::VectorXd y(static_cast<Eigen::Index>(samples_.size()));
  for (size_t i = 0; i < samples_.size(); ++i) y[static_cast<Eigen::Index>(i)] = samples_[i].y;
  gp_.Fit(unit_x_, y);
  best_mean_ = -std::numeric_limits<double>::infinity();
  for (Eigen::Index i = 0; i < unit_x_.rows(); ++i) {
    double mean = 0.0;
    double std = 0.0;
    gp_.PredictOne(unit_x_.row(i).transpose(), &mean, &std);
    best_mean_ = std::max(best_mean_, mean);
  }
  stale_ = false;
}

double BayesianOptimizer::ExpectedImprovementUnit(const Eigen::VectorXd& u) const {
  double mean = 0.0;
  double std = 0.0;
  gp_.PredictOne(u, &mean, &std);
  // Work in normalised units so xi means the same whatever the score's scale.
  const double scale = gp_.y_scale();
  const double improvement = (mean - best_mean_) / scale - xi_;
  const double sigma = std / scale;
  if (sigma < kMinStd) return std::max(improvement, 0.0) * scale;
  const double z = improvement / sigma;
  return (improvement * NormalCdf(z) + sigma * NormalPdf(z)) * scale;
}

double BayesianOptimizer::ExpectedImprovement(const std::vector<double>& x) {
  FitIfStale();
  return ExpectedImprovementUnit(ToUnit(x));
}

std::vector<double> BayesianOptimizer::NextSample() {
  if (samples_.empty()) return FromUnit(RandomUnitPoint());
  FitIfStale();
  const Eigen::Index d = static_cast<Eigen::Index>(bounds_.size());
  auto negative_ei = [this](const Eigen::VectorXd& u) { return -ExpectedImprovementUnit(u); };

  // Starts: the best few of a uniform candidate set (finds narrow EI peaks) plus purely
  // random starts. Draw all random numbers up front so the sequence is fixed per seed.
  std::vector<std::pair<double, Eigen::VectorXd>> candidates;
  candidates.reserve(kCandidates);
  for (int i = 0; i < kCandidates; ++i) {
    Eigen::VectorXd u = RandomUnitPoint();
    candidates.emplace_back(negative_ei(u), u);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Eigen::VectorXd> starts;
  for (int i = 0; i < kCandidateStarts; ++i) starts.push_back(candidates[i].second);
  for (int i = 0; i < kRandomStarts; ++i) starts.push_back(RandomUnitPoint());

  MinimizeOptions options;
  options.initial_step = 0.05;
  options.tolerance = 1e-9;
  options.max_evaluations = 100 * static_cast<int>(d);
  const Eigen::VectorXd lower = Eigen::VectorXd::Zero(d);
  const Eigen::VectorXd upper = Eigen::VectorXd::Ones(d);
  double best_value = candidates.front().first;
  Eigen::VectorXd best_u = candidates.front().second;
  for (const Eigen::VectorXd& start : starts) {
    MinimizeResult r = MinimizeInBox(negative_ei, start, lower, upper, options);
    if (r.value < best_value) {
      best_value = r.value;
      best_u = r.x;
    }
  }
  return FromUnit(best_u);
}

std::optional<BayesianOptimizer::Sample> BayesianOptimizer::best() const {
  if (samples_.empty()) return std::nullopt;
  auto it = std::max_element(samples_.begin(), samples_.end(),
                             [](const Sample& a, const Sample& b) { return a.y < b.y; });
  return *it;
}

}  // namespace hvd::autotune
