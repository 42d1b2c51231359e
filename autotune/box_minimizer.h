#ifndef HVD_AUTOTUNE_BOX_MINIMIZER_H_
#define HVD_AUTOTUNE_BOX_MINIMIZER_H_

#include <Eigen/Core>
#include <functional>

// Derivative-free local minimisation inside a box, shared by the Gaussian process (fitting
// its hyperparameters) and the Bayesian optimizer (maximising the acquisition function).
// Pure function of its inputs: deterministic, no I/O, no shared state; safe on any thread.
namespace hvd::autotune {

struct MinimizeOptions {
  int max_evaluations = 200;
  // Stops once the simplex's function values differ by less than this and its vertices
  // lie within this distance of the best one.
  double tolerance = 1e-7;
  // Edge length of the initial simplex, in the units of x.
  double initial_step = 0.1;
};

struct MinimizeResult {
  Eigen::VectorXd x;
  double value = 0.0;
  int evaluations = 0;
};

// Nelder-Mead simplex search for a local minimum of `f` over the box [lower, upper].
// Every trial point is projected onto the box, so `f` is only ever called inside it.
// `f` may return +infinity for infeasible points. Requires lower <= start <= upper
// component-wise (start is projected if not).
MinimizeResult MinimizeInBox(const std::function<double(const Eigen::VectorXd&)>& f,
                             const Eigen::VectorXd& start, const Eigen::VectorXd& lower,
                             const Eigen::VectorXd& upper, const MinimizeOptions& options);

}  // namespace hvd::autotune

#endif  // HVD_AUTOTUNE_BOX_MINIMIZER_H_
