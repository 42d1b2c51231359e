#include "autotune/gaussian_process.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "autotune/box_minimizer.h"
#include "common/check.h"

namespace hvd::autotune {
namespace {

// Added to alpha^2 on the diagonal: keeps K positive definite when alpha is 0.
constexpr double kJitter = 1e-10;

// Starting points for the hyperparameter search, as (log l, log sigma_f). Several starts
// avoid settling in the "everything is noise" optimum that long length scales give.
constexpr double kStarts[][2] = {{0.0, 0.0}, {-1.6, 0.0}, {-3.0, 0.0}};

}  // namespace

GaussianProcess::GaussianProcess(double alpha) : alpha_(alpha) {
  HVD_CHECK(alpha >= 0.0) << "alpha " << alpha;
}

double GaussianProcess::DiagonalNoise() const { return alpha_ * alpha_ + kJitter; }

Eigen::MatrixXd GaussianProcess::Kernel(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                        double length_scale, double signal_std) const {
  Eigen::MatrixXd k(a.rows(), b.rows());
  const double inv = 1.0 / (2.0 * length_scale * length_scale);
  const double sf2 = signal_std * signal_std;
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    for (Eigen::Index j = 0; j < b.rows(); ++j) {
      k(i, j) = sf2 * std::exp(-(a.row(i) - b.row(j)).squaredNorm() * inv);
    }
  }
  return k;
}

void GaussianProcess::Fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y) {
  HVD_CHECK(x.rows() >= 1 && x.rows() == y.size()) << x.rows() << " points, " << y.size() << " y";
  x_ = x;
  const Eigen::Index n = y.size();
  y_offset_ = y.mean();
  y_scale_ = 1.0;
  if (n >= 3) {
    double var = (y.array() - y_offset_).square().sum() / static_cast<double>(n);
    if (var > 0.0) y_scale_ = std::sqrt(var);
  }
  y_ = (y.array() - y_offset_) / y_scale_;
  FitHyperparameters();
  Eigen::MatrixXd k = Kernel(x_, x_, length_scale_, signal_std_);
  k.diagonal().array() += DiagonalNoise();
  // Escalate the jitter until the factorisation succeeds; with the fitted hyperparameters
  // inside a bounded box this terminates after a few rounds.
  for (double extra = 0.0;; extra = extra == 0.0 ? 1e-9 : extra * 10.0) {
    Eigen::MatrixXd kk = k;
    kk.diagonal().array() += extra;
    chol_.compute(kk);
    if (chol_.info() == Eigen::Success) break;
    HVD_CHECK(extra < 1.0) << "kernel matrix is not positive definite";
  }
  weights_ = chol_.solve(y_);
  fitted_ = true;
}

double GaussianProcess::NegativeLogMarginalLikelihood(double length_scale,
                                                      double signal_std) const {
  Eigen::MatrixXd k = Kernel(x_, x_, length_scale, signal_std);
  k.diagonal().array() += DiagonalNoise();
  Eigen::LLT<Eigen::MatrixXd> chol(k);
  if (chol.info() != Eigen::Success) return std::numeric_limits<double>::infinity();
  Eigen::VectorXd a = chol.solve(y_);
  double log_det_half = chol.matrixLLT().diagonal().array().log().sum();
  return 0.5 * y_.dot(a) + log_det_half +
         0.5 * static_cast<double>(y_.size()) * std::log(2.0 * std::numbers::pi);
}

void GaussianProcess::FitHyperparameters() {
  Eigen::Vector2d lower(std::log(kMinLengthScale), std::log(kMinSignalStd));
  Eigen::Vector2d upper(std::log(kMaxLengthScale), std::log(kMaxSignalStd));
  auto objective = [this](const Eigen::VectorXd& p) {
    return NegativeLogMarginalLikelihood(std::exp(p[0]), std::exp(p[1]));
  };
  MinimizeOptions options;
  options.initial_step = 0.5;
  options.tolerance = 1e-6;
  double best = std::numeric_limits<double>::infinity();
  Eigen::VectorXd best_p = Eigen::Vector2d(0.0, 0.0);
  for (const auto& s : kStarts) {
    MinimizeResult r = MinimizeInBox(objective, Eigen::Vector2d(s[0], s[1]), lower, upper, options);
    if (r.value < best) {
      best = r.value;
      best_p = r.x;
    }
  }
  length_scale_ = std::exp(best_p[0]);
  signal_std_ = std::exp(best_p[1]);
}

void GaussianProcess::Predict(const Eigen::MatrixXd& x, Eigen::VectorXd* mean,
                              Eigen::VectorXd* std) const {
  HVD_CHECK(fitted_) << "Predict before Fit";
  mean->resize(x.rows());
  std->resize(x.rows());
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    PredictOne(x.row(i).transpose(), &(*mean)[i], &(*std)[i]);
  }
}

void GaussianProcess::PredictOne(const Eigen::VectorXd& x, double* mean, double* std) const {
  HVD_CHECK(fitted_) << "Predict before Fit";
  const double inv = 1.0 / (2.0 * length_scale_ * length_scale_);
  const double sf2 = signal_std_ * signal_std_;
  Eigen::VectorXd k(x_.rows());
  for (Eigen::Index j = 0; j < x_.rows(); ++j) {
    k[j] = sf2 * std::exp(-(x_.row(j).transpose() - x).squaredNorm() * inv);
  }
  Eigen::VectorXd v = chol_.matrixL().solve(k);
  double var = sf2 - v.squaredNorm();
  *mean = k.dot(weights_) * y_scale_ + y_offset_;
  *std = std::sqrt(std::max(var, 0.0)) * y_scale_;
}

}  // namespace hvd::autotune
