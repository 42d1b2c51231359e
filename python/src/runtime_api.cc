#include "runtime_api.h"

#include <dlfcn.h>

namespace hvd::python {
namespace {

// Resolves one symbol into `slot`; records the first missing name in `missing`.
template <typename Fn>
void Resolve(void* library, const char* name, Fn* slot, std::string* missing) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr && missing->empty()) {
    *missing = name;
  }
  *slot = reinterpret_cast<Fn>(symbol);
}

// Fills `api` from `library`; returns the name of a missing symbol, or "" when complete.
std::string ResolveAll(void* library, RuntimeApi* api) {
  std::string missing;
#define HVD_RESOLVE(field) Resolve(library, "hvd_" #field, &api->field, &missing)
  HVD_RESOLVE(op_options_init);
  HVD_RESOLVE(init);
  HVD_RESOLVE(init_with_process_sets);
  HVD_RESOLVE(shutdown);
  HVD_RESOLVE(abort);
  HVD_RESOLVE(report_failure);
  HVD_RESOLVE(is_initialized);
  HVD_RESOLVE(last_error);
  HVD_RESOLVE(status_name);
  HVD_RESOLVE(rank);
  HVD_RESOLVE(size);
  HVD_RESOLVE(local_rank);
  HVD_RESOLVE(local_size);
  HVD_RESOLVE(cross_rank);
  HVD_RESOLVE(cross_size);
  HVD_RESOLVE(is_homogeneous);
  HVD_RESOLVE(elastic_round);
  HVD_RESOLVE(elastic_host_update);
  HVD_RESOLVE(elastic_synced);
  HVD_RESOLVE(allreduce);
  HVD_RESOLVE(grouped_allreduce);
  HVD_RESOLVE(allgather);
  HVD_RESOLVE(grouped_allgather);
  HVD_RESOLVE(broadcast);
  HVD_RESOLVE(alltoall);
  HVD_RESOLVE(reducescatter);
  HVD_RESOLVE(grouped_reducescatter);
  HVD_RESOLVE(barrier);
  HVD_RESOLVE(join);
  HVD_RESOLVE(poll);
  HVD_RESOLVE(wait);
  HVD_RESOLVE(num_outputs);
  HVD_RESOLVE(output);
  HVD_RESOLVE(free);
  HVD_RESOLVE(free_on_stream);
  HVD_RESOLVE(received_splits);
  HVD_RESOLVE(join_result);
  HVD_RESOLVE(release);
  HVD_RESOLVE(add_process_set);
  HVD_RESOLVE(remove_process_set);
  HVD_RESOLVE(process_set_rank);
  HVD_RESOLVE(process_set_size);
  HVD_RESOLVE(process_set_included);
  HVD_RESOLVE(process_set_ranks);
  HVD_RESOLVE(process_set_ids);
  HVD_RESOLVE(start_timeline);
  HVD_RESOLVE(stop_timeline);
  HVD_RESOLVE(build_flags);
  HVD_RESOLVE(nccl_version);
  HVD_RESOLVE(enabled_flags);
  HVD_RESOLVE(version);
#undef HVD_RESOLVE
  return missing;
}

}  // namespace

LoadResult LoadRuntime(const std::vector<std::string>& candidates, RuntimeApi* api) {
  LoadResult result;
  for (const std::string& path : candidates) {
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = dlerror();
      result.error += "  " + path + ": " + (why != nullptr ? why : "dlopen failed") + "\n";
      continue;
    }
    RuntimeApi candidate{};
    std::string missing = ResolveAll(library, &candidate);
    if (!missing.empty()) {
      result.error +=
          "  " + path + ": does not export " + missing + " (not a libhvd matching hvd/c_api.h)\n";
      dlclose(library);
      continue;
    }
    *api = candidate;
    result.ok = true;
    result.path = path;
    return result;
  }
  return result;
}

}  // namespace hvd::python
