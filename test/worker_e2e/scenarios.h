// The scenarios of hvd_e2e_worker. Each runs on every rank of the job with the same calls in
// the same order, computes the expected values from rank and size, and reports differences
// through worker_check.h. "Initialized" scenarios run between main's hvd_init and hvd_shutdown;
// the others do their own init/shutdown (and are entered with the runtime shut down).
#ifndef HVD_TEST_WORKER_E2E_SCENARIOS_H_
#define HVD_TEST_WORKER_E2E_SCENARIOS_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "worker_check.h"

namespace hvd_e2e {

// An op in flight plus the check to run once it completed; `keep` holds the buffers alive.
struct Pending {
  hvd_handle_t handle;
  std::string what;
  std::function<void(hvd_handle_t)> check;
  std::vector<std::shared_ptr<Tensor>> keep;
};

// Waits for every op (in order), runs its check, releases it.
void FinishAll(std::vector<Pending>* pending);

// This rank and the job's size (Ctx(), set by main or by a scenario's own init).
inline int32_t N() { return Ctx().size; }
inline int32_t R() { return Ctx().rank; }
// A zero-filled tensor kept alive by the Pending that holds it.
inline std::shared_ptr<Tensor> Make(hvd_dtype_t dtype, std::vector<int64_t> shape) {
  return std::make_shared<Tensor>(dtype, std::move(shape));
}

// A value of the gather/broadcast/alltoall patterns: v below 127 as it is, larger ones wrapped,
// so that it is exact and in range in every dtype (int8 included) at up to 16 ranks.
inline double Small(int64_t v) { return static_cast<double>(v % 127); }

// The reductions' inputs and expected results, and List (worker_values.h).
using hvd_worker::List;
using hvd_worker::ReduceExpected;
using hvd_worker::ReduceFits;
using hvd_worker::ReduceInput;
using hvd_worker::ReduceOpName;
// Records a difference unless a call returned `want` (immediate results, not handles).
void ExpectStatus(hvd_status_t got, hvd_status_t want, const std::string& what);
// A Sum allreduce of float32 [4] filled with `mine` on set `set`; the result must be `want`.
void SumAllreduce(const std::string& name, double mine, double want, int32_t set = 0);
// A barrier on the global set. Needed before hvd_shutdown after rank-local checks: a rank's
// shutdown shuts the runtime down on every rank (as in Horovod), failing the others' calls.
void GlobalBarrier(const std::string& what);

// collective_scenarios.cc (initialized)
void Allreduce();
void Adasum();           // op=Adasum: orthogonal updates add, equal ones stay, integers refused
void Lone();             // one allreduce at a time (the eager path on TCP and shared memory)
void LoneCollectives();  // the other collectives one at a time (eager on shared memory)
void Allgather();
void Broadcast();
void Alltoall();
void Reducescatter();
void Barrier();
void Grouped();
void Fused();
void FusedAllgather();
// reduction_scenarios.cc (initialized)
void NanMinMax();  // Min/Max with a NaN on one rank: the same result everywhere

// timeout_scenarios.cc (initialized)
void SlowBroadcast();  // 64 MiB on a slow link: longer than the timeout, no wait that long
// control_scenarios.cc
void ProcessSetsStatic();   // own init
void ProcessSetsDynamic();  // own init (HVD_DYNAMIC_PROCESS_SETS=1)
// error_scenarios.cc (initialized)
void Mismatch();
void DuplicateName();
void BadInput();
// lifecycle_scenarios.cc
void Join();    // initialized
void Reinit();  // own init

}  // namespace hvd_e2e

#endif  // HVD_TEST_WORKER_E2E_SCENARIOS_H_
