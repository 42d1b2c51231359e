#ifndef HVD_AUTOTUNE_GAUSSIAN_PROCESS_H_
#define HVD_AUTOTUNE_GAUSSIAN_PROCESS_H_

#include <Eigen/Cholesky>
#include <Eigen/Core>

// Gaussian-process regression with an RBF kernel, the surrogate model of the Bayesian
// optimizer (Horovod: horovod/common/optim/gaussian_process.cc).
//
//   k(x, x') = sigma_f^2 * exp(-|x - x'|^2 / (2 l^2)),   K = k(X, X) + alpha^2 I
//
// `alpha` is the observation noise (a standard deviation, in normalised-y units). Fit()
// normalises y to zero mean and unit standard deviation once there are at least three
// samples (fewer samples are only centred), then picks l and sigma_f by maximising the
// log marginal likelihood over log-parameters with a bounded simplex search started from
// a few fixed points. Deterministic; not synchronized (one thread at a time).
namespace hvd::autotune {

class GaussianProcess {
 public:
  // Hyperparameter search box (inputs are expected to be scaled to about [0, 1]).
  static constexpr double kMinLengthScale = 1e-2;
  static constexpr double kMaxLengthScale = 1e2;
  static constexpr double kMinSignalStd = 1e-2;
  static constexpr double kMaxSignalStd = 1e2;

  // alpha >= 0; a tiny jitter is always added to the diagonal so noiseless data with
  // nearly repeated points still factorises.
  explicit GaussianProcess(double alpha);

  // x: one sample per row (n x d); y: n targets. Requires n >= 1. Replaces any earlier fit.
  void Fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y);
  bool fitted() const { return fitted_; }

  // Posterior mean and standard deviation of the latent function (noise excluded) at
  // each row of `x`, in the units of the training y. Requires fitted().
  void Predict(const Eigen::MatrixXd& x, Eigen::VectorXd* mean, Eigen::VectorXd* std) const;
  void PredictOne(const Eigen::VectorXd& x, double* mean, double* std) const;

  // Negative log marginal likelihood of the fitted (normalised) training targets under
  // the given hyperparameters; +infinity if the kernel matrix is not positive definite.
  double NegativeLogMarginalLikelihood(double length_scale, double signal_std) const;

  double length_scale() const { return length_scale_; }
  double signal_std() const { return signal_std_; }
  // y = normalised_y * y_scale() + y_offset().
  double y_scale() const { return y_scale_; }
  double y_offset() const { return y_offset_; }

 private:
  Eigen::MatrixXd Kernel(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, double length_scale,
                         double signal_std) const;
  double DiagonalNoise() const;
  void FitHyperparameters();

  double alpha_;
  bool fitted_ = false;
  Eigen::MatrixXd x_;
  Eigen::VectorXd y_;  // normalised
  double y_offset_ = 0.0;
  double y_scale_ = 1.0;
  double length_scale_ = 1.0;
  double signal_std_ = 1.0;
  Eigen::LLT<Eigen::MatrixXd> chol_;
  Eigen::VectorXd weights_;  // K^-1 y
};

}  // namespace hvd::autotune

#endif  // HVD_AUTOTUNE_GAUSSIAN_PROCESS_H_
