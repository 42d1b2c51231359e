#ifndef HVD_PYTHON_RUNTIME_API_H_
#define HVD_PYTHON_RUNTIME_API_H_

#include <string>
#include <vector>

#include "hvd/c_api.h"

// The libhvd entry points the Python binding calls, resolved with dlsym from a library that
// is dlopen()ed at import time. The extension never links libhvd: the worker loads exactly
// the runtime hvdrun names in HVD_RUNTIME_LIBRARY (or the copy installed beside the package),
// so one extension works with any build of the runtime that implements c_api.h.
//
// Threading: Load() is called once, under the GIL, while the module initialises; afterwards
// the table is read-only and may be used from any thread.
namespace hvd::python {

struct RuntimeApi {
  decltype(&::hvd_op_options_init) op_options_init;
  decltype(&::hvd_init) init;
  decltype(&::hvd_init_with_process_sets) init_with_process_sets;
  decltype(&::hvd_shutdown) shutdown;
  decltype(&::hvd_abort) abort;
  decltype(&::hvd_report_failure) report_failure;
  decltype(&::hvd_is_initialized) is_initialized;
  decltype(&::hvd_last_error) last_error;
  decltype(&::hvd_status_name) status_name;
  decltype(&::hvd_rank) rank;
  decltype(&::hvd_size) size;
  decltype(&::hvd_local_rank) local_rank;
  decltype(&::hvd_local_size) local_size;
  decltype(&::hvd_cross_rank) cross_rank;
  decltype(&::hvd_cross_size) cross_size;
  decltype(&::hvd_is_homogeneous) is_homogeneous;
  decltype(&::hvd_elastic_round) elastic_round;
  decltype(&::hvd_elastic_host_update) elastic_host_update;
  decltype(&::hvd_elastic_synced) elastic_synced;
  decltype(&::hvd_allreduce) allreduce;
  decltype(&::hvd_grouped_allreduce) grouped_allreduce;
  decltype(&::hvd_allgather) allgather;
  decltype(&::hvd_grouped_allgather) grouped_allgather;
  decltype(&::hvd_broadcast) broadcast;
  decltype(&::hvd_alltoall) alltoall;
  decltype(&::hvd_reducescatter) reducescatter;
  decltype(&::hvd_grouped_reducescatter) grouped_reducescatter;
  decltype(&::hvd_barrier) barrier;
  decltype(&::hvd_join) join;
  decltype(&::hvd_poll) poll;
  decltype(&::hvd_wait) wait;
  decltype(&::hvd_num_outputs) num_outputs;
  decltype(&::hvd_output) output;
  decltype(&::hvd_free) free;
  decltype(&::hvd_free_on_stream) free_on_stream;
  decltype(&::hvd_received_splits) received_splits;
  decltype(&::hvd_join_result) join_result;
  decltype(&::hvd_release) release;
  decltype(&::hvd_add_process_set) add_process_set;
  decltype(&::hvd_remove_process_set) remove_process_set;
  decltype(&::hvd_process_set_rank) process_set_rank;
  decltype(&::hvd_process_set_size) process_set_size;
  decltype(&::hvd_process_set_included) process_set_included;
  decltype(&::hvd_process_set_ranks) process_set_ranks;
  decltype(&::hvd_process_set_ids) process_set_ids;
  decltype(&::hvd_start_timeline) start_timeline;
  decltype(&::hvd_stop_timeline) stop_timeline;
  decltype(&::hvd_build_flags) build_flags;
  decltype(&::hvd_nccl_version) nccl_version;
  decltype(&::hvd_enabled_flags) enabled_flags;
  decltype(&::hvd_version) version;
};

struct LoadResult {
  bool ok = false;
  std::string path;   // the library that was loaded
  std::string error;  // one line per candidate that failed, naming it and why
};

// Tries `candidates` in order with dlopen(RTLD_NOW | RTLD_LOCAL) and resolves every entry of
// `api` from the first one that opens and exports all symbols. Never dlclose()s a library
// that was accepted: the table and runtime-owned buffers must outlive every Python object.
LoadResult LoadRuntime(const std::vector<std::string>& candidates, RuntimeApi* api);

}  // namespace hvd::python

#endif  // HVD_PYTHON_RUNTIME_API_H_
