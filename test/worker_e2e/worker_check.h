// Checking helpers of hvd_e2e_worker: the C API only (hvd/c_api.h), no runtime internals.
//
// Every check names the scenario, the rank and what differed (expected vs got). A failed
// enqueue or wait ends the process at once (later ops would only cascade); a wrong value is
// counted and the scenario goes on, so one run lists every difference. Not thread-safe: the
// worker is single-threaded.
#ifndef HVD_TEST_WORKER_E2E_WORKER_CHECK_H_
#define HVD_TEST_WORKER_E2E_WORKER_CHECK_H_

#include <hvd/c_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "worker_values.h"

namespace hvd_e2e {

// Seconds any single wait may take before the worker gives up (no test may hang).
constexpr double kWaitSeconds = 60.0;

using hvd_worker::AllDTypes;  // all eleven dtypes of the C API, bool last
using hvd_worker::DType;
const DType& DTypeOf(hvd_dtype_t id);

// The scenario now running and this process's place in the job; set by main.
struct Context {
  std::string scenario;
  int32_t rank = 0;
  int32_t size = 1;
  int failures = 0;
};
Context& Ctx();

// Records a difference: "[scenario] rank R: what".
void Fail(const std::string& what);
// Ends the process (exit 1) with the status and hvd_last_error().
[[noreturn]] void Die(const std::string& what, hvd_status_t status);
// Dies unless status is HVD_OK.
void Require(hvd_status_t status, const std::string& what);
// Waits (kWaitSeconds) and dies unless the handle completed with HVD_OK; does not release.
void WaitOk(hvd_handle_t handle, const std::string& what);
// WaitOk then hvd_release.
void WaitRelease(hvd_handle_t handle, const std::string& what);
// Waits for a handle that must fail with `want`; returns its message and releases it.
std::string WaitFailure(hvd_handle_t handle, hvd_status_t want, const std::string& what);

std::string Shape(const std::vector<int64_t>& shape);

// A dense host tensor that owns its bytes; elements are read and written as doubles.
class Tensor {
 public:
  Tensor(hvd_dtype_t dtype, std::vector<int64_t> shape);
  int64_t count() const;
  void Set(int64_t i, double v);
  double Get(int64_t i) const;
  void Fill(double v);
  hvd_tensor_t Desc();
  hvd_dtype_t dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }

 private:
  hvd_dtype_t dtype_;
  std::vector<int64_t> shape_;
  std::vector<unsigned char> bytes_;
};

// Compares every element with `want` (exact for integers/bool, relative tolerance for floats).
void ExpectValues(const std::string& what, const Tensor& got, const std::vector<double>& want);

// Takes runtime-allocated output `index` of a completed handle, checks dtype, shape and values,
// and frees it.
void ExpectOutput(hvd_handle_t handle, int32_t index, const std::string& what, hvd_dtype_t dtype,
                  const std::vector<int64_t>& shape, const std::vector<double>& want);

// Options with the defaults and the given name (a copy that lives until the process ends).
hvd_op_options_t Options(const std::string& name);

// Every rank's string, in rank order (an allgather of the bytes over the global set).
std::vector<std::string> GatherStrings(const std::string& mine, const std::string& name);

}  // namespace hvd_e2e

#endif  // HVD_TEST_WORKER_E2E_WORKER_CHECK_H_
