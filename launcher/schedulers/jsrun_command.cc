#include "launcher/schedulers/mpirun_command.h"

namespace hvd::launcher {

std::vector<std::string> BuildJsrunCommand(const std::string& rankfile_path,
                                           const std::string& output_filename,
                                           const std::string& mpi_args,
                                           const std::vector<std::string>& command) {
  std::vector<std::string> argv = {"jsrun", "--erf_input", rankfile_path};
  if (!output_filename.empty()) {
    argv.insert(argv.end(), {"--stdio_stderr", output_filename, "--stdio_stdout", output_filename});
  }
  std::string smpi = "-mca pml ob1 -mca btl ^openib";
  if (!mpi_args.empty()) smpi += " " + mpi_args;
  argv.insert(argv.end(), {"--smpiargs", smpi});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

Result<std::string> BuildJsrunRankfile(const std::vector<discovery::HostSlots>& hosts, int num_proc,
                                       int gpus_per_host, int cores_per_host,
                                       int threads_per_core) {
  if (gpus_per_host <= 0) return Status::InvalidArgument("jsrun needs GPUs on every host");
  int cpus_per_rank = cores_per_host * threads_per_core / gpus_per_host;
  if (cpus_per_rank <= 0) return Status::InvalidArgument("fewer CPUs than GPUs per host");
  std::string text = "overlapping_rs: allow\ncpu_index_using: logical\n";
  int rank = 0;
  for (const discovery::HostSlots& host : hosts) {
    if (host.slots > gpus_per_host) {
      return Status::InvalidArgument("host " + host.host + " has " + std::to_string(host.slots) +
                                     " slots but only " + std::to_string(gpus_per_host) +
                                     " GPUs; jsrun runs at most one rank per GPU");
    }
    for (int slot = 0; slot < host.slots && rank < num_proc; ++slot, ++rank) {
      int first = slot * cpus_per_rank;
      text += "rank: " + std::to_string(rank) + ": { hostname: " + host.host + "; cpu: {" +
              std::to_string(first) + "-" + std::to_string(first + cpus_per_rank - 1) +
              "} ; gpu: * ; mem: * }\n";
    }
  }
  if (rank < num_proc) {
    return Status::InvalidArgument("Requested more processes (" + std::to_string(num_proc) +
                                   ") than there are available slots (" + std::to_string(rank) +
                                   ")");
  }
  return text;
}

}  // namespace hvd::launcher
