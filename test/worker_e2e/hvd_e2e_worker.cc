// hvd_e2e_worker: an end-to-end check of libhvd through its public C API only, run under the
// real hvdrun (test/worker_e2e/CMakeLists.txt):
//
//   hvdrun -np 4 hvd_e2e_worker allreduce broadcast join ...
//   hvdrun -np 2 hvd_e2e_worker all
//
// Each argument names a scenario (scenarios.h); they run in the given order. Every rank
// prints "[scenario] rank R: ..." for each difference it finds and exits 1 if there was any;
// a call that fails outright or a wait past its deadline ends the process at once.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "scenarios.h"

namespace {

struct Scenario {
  const char* name;
  void (*run)();
  bool own_init;       // the scenario calls hvd_init/hvd_shutdown itself
  bool in_all = true;  // run by `all` (not: a scenario that needs a setting of its own test)
};

const Scenario kScenarios[] = {
    {"allreduce", hvd_e2e::Allreduce, false},
    {"adasum", hvd_e2e::Adasum, false},
    {"lone", hvd_e2e::Lone, false},
    {"lone_collectives", hvd_e2e::LoneCollectives, false},
    {"allgather", hvd_e2e::Allgather, false},
    {"broadcast", hvd_e2e::Broadcast, false},
    {"alltoall", hvd_e2e::Alltoall, false},
    {"reducescatter", hvd_e2e::Reducescatter, false},
    {"barrier", hvd_e2e::Barrier, false},
    {"grouped", hvd_e2e::Grouped, false},
    {"fused", hvd_e2e::Fused, false},
    {"fused_allgather", hvd_e2e::FusedAllgather, false},
    {"nan_min_max", hvd_e2e::NanMinMax, false},
    {"slow_broadcast", hvd_e2e::SlowBroadcast, false, false},  // a slow link
    {"process_sets_static", hvd_e2e::ProcessSetsStatic, true},
    {"process_sets_dynamic", hvd_e2e::ProcessSetsDynamic, true},
    {"mismatch", hvd_e2e::Mismatch, false},
    {"duplicate_name", hvd_e2e::DuplicateName, false},
    {"bad_input", hvd_e2e::BadInput, false},
    {"join", hvd_e2e::Join, false},
    {"reinit", hvd_e2e::Reinit, true},
};

int Usage() {
  std::fprintf(stderr, "usage: hvd_e2e_worker SCENARIO... | all\nscenarios:");
  for (const Scenario& s : kScenarios) std::fprintf(stderr, " %s", s.name);
  std::fprintf(stderr, "\n");
  return 2;
}

bool Initialized() {
  int32_t initialized = 0;
  hvd_is_initialized(&initialized);
  return initialized != 0;
}

}  // namespace

int main(int argc, char** argv) {
  using hvd_e2e::Ctx;
  std::vector<const Scenario*> chosen;
  for (int i = 1; i < argc; ++i) {
    bool found = false;
    for (const Scenario& s : kScenarios) {
      if ((std::strcmp(argv[i], "all") == 0 && s.in_all) || std::strcmp(argv[i], s.name) == 0) {
        chosen.push_back(&s);
        found = true;
      }
    }
    if (!found) return Usage();
  }
  if (chosen.empty()) return Usage();
  for (const Scenario* s : chosen) {
    Ctx().scenario = s->name;
    if (s->own_init && Initialized()) {
      hvd_e2e::GlobalBarrier("barrier before shutdown");
      hvd_e2e::Require(hvd_shutdown(), "hvd_shutdown");
    }
    if (!s->own_init && !Initialized()) {
      hvd_e2e::Require(hvd_init(), "hvd_init");
      hvd_e2e::Require(hvd_rank(&Ctx().rank), "hvd_rank");
      hvd_e2e::Require(hvd_size(&Ctx().size), "hvd_size");
    }
    const int before = Ctx().failures;
    s->run();
    if (Ctx().rank == 0) {
      std::printf("[%s] %s on %d ranks\n", s->name, Ctx().failures == before ? "ok" : "FAILED",
                  Ctx().size);
      std::fflush(stdout);
    }
  }
  Ctx().scenario = "shutdown";
  if (Initialized()) {
    hvd_e2e::GlobalBarrier("barrier before shutdown");
    hvd_e2e::Require(hvd_shutdown(), "hvd_shutdown");
  }
  if (Ctx().failures > 0) {
    std::fprintf(stderr, "rank %d: %d difference(s)\n", Ctx().rank, Ctx().failures);
    return 1;
  }
  return 0;
}
