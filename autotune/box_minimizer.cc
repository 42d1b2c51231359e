#include "autotune/box_minimizer.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "common/check.h"

namespace hvd::autotune {
namespace {

// Standard Nelder-Mead coefficients (reflection, expansion, contraction, shrink).
constexpr double kReflect = 1.0;
constexpr double kExpand = 2.0;
constexpr double kContract = 0.5;
constexpr double kShrink = 0.5;

struct Vertex {
  Eigen::VectorXd x;
  double value;
};

class Simplex {
 public:
  Simplex(const std::function<double(const Eigen::VectorXd&)>& f, const Eigen::VectorXd& lower,
          const Eigen::VectorXd& upper)
      : f_(f), lower_(lower), upper_(upper) {}

  Vertex Evaluate(const Eigen::VectorXd& x) {
    Eigen::VectorXd p = x.cwiseMax(lower_).cwiseMin(upper_);
    ++evaluations_;
    return {p, f_(p)};
  }
  int evaluations() const { return evaluations_; }

 private:
  const std::function<double(const Eigen::VectorXd&)>& f_;
  const Eigen::VectorXd& lower_;
  const Eigen::VectorXd& upper_;
  int evaluations_ = 0;
};

bool Converged(const std::vector<Vertex>& v, double tolerance) {
  double spread = v.back().value - v.front().value;
  if (!(spread <= tolerance)) return false;  // also false for infinities
  for (size_t i = 1; i < v.size(); ++i) {
    if ((v[i].x - v[0].x).lpNorm<Eigen::Infinity>() > tolerance) return false;
  }
  return true;
}

}  // namespace

MinimizeResult MinimizeInBox(const std::function<double(const Eigen::VectorXd&)>& f,
                             const Eigen::VectorXd& start, const Eigen::VectorXd& lower,
                             const Eigen::VectorXd& upper, const MinimizeOptions& options) {
  const Eigen::Index n = start.size();
  HVD_CHECK(n > 0 && lower.size() == n && upper.size() == n) << "dimension mismatch";
  Simplex simplex(f, lower, upper);
  std::vector<Vertex> v;
  v.push_back(simplex.Evaluate(start));
  for (Eigen::Index i = 0; i < n; ++i) {
    Eigen::VectorXd x = v[0].x;
    // Step towards the side of the box with more room so the vertex stays distinct.
    bool up = upper[i] - x[i] >= x[i] - lower[i];
    x[i] += up ? options.initial_step : -options.initial_step;
    v.push_back(simplex.Evaluate(x));
  }
  auto by_value = [](const Vertex& a, const Vertex& b) { return a.value < b.value; };
  while (simplex.evaluations() < options.max_evaluations) {
    std::stable_sort(v.begin(), v.end(), by_value);
    if (Converged(v, options.tolerance)) break;
    Eigen::VectorXd centroid = Eigen::VectorXd::Zero(n);
    for (Eigen::Index i = 0; i < n; ++i) centroid += v[i].x;
    centroid /= static_cast<double>(n);
    Vertex& worst = v.back();
    Vertex reflected = simplex.Evaluate(centroid + kReflect * (centroid - worst.x));
    if (reflected.value < v.front().value) {
      Vertex expanded = simplex.Evaluate(centroid + kExpand * (reflected.x - centroid));
      worst = expanded.value < reflected.value ? expanded : reflected;
    } else if (reflected.value < v[n - 1].value) {
      worst = reflected;
    } else {
      const Eigen::VectorXd& toward = reflected.value < worst.value ? reflected.x : worst.x;
      Vertex contracted = simplex.Evaluate(centroid + kContract * (toward - centroid));
      if (contracted.value < std::min(reflected.value, worst.value)) {
        worst = contracted;
      } else {
        for (size_t i = 1; i < v.size(); ++i) {
          v[i] = simplex.Evaluate(v[0].x + kShrink * (v[i].x - v[0].x));
        }
      }
    }
  }
  auto best = std::min_element(v.begin(), v.end(), by_value);
  return {best->x, best->value, simplex.evaluations()};
}

}  // namespace hvd::autotune
