#ifndef HVD_LAUNCHER_SCHEDULERS_MPIRUN_COMMAND_H_
#define HVD_LAUNCHER_SCHEDULERS_MPIRUN_COMMAND_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "discovery/host_slots.h"

// The mpirun and jsrun command lines hvdrun --mpi / --jsrun hand the job to (Horovod's
// runner/mpi_run.py and js_run.py). Pure functions; thread-safe.
namespace hvd::launcher {

enum class MpiFlavor { kOpenMpi, kSpectrum, kMpich, kIntel, kUnknown, kMissing };

// From `mpirun --version` output: "Open MPI" / "OpenRTE" -> Open MPI, "IBM Spectrum MPI",
// "MPICH" / "HYDRA", "Intel(R) MPI"; empty output = kMissing; anything else kUnknown.
MpiFlavor DetectMpiFlavor(std::string_view version_output);
std::string MpiFlavorName(MpiFlavor flavor);

// False for variables never exported to ranks (Horovod's IGNORE_REGEXES): BASH_FUNC_*,
// OLDPWD, *CUDA_VISIBLE_DEVICES, _HOROVOD_SECRET_KEY, and hvdrun's own HVD_SECRET_FD.
bool IsExportableVariable(const std::string& name);

struct MpirunInputs {
  MpiFlavor flavor = MpiFlavor::kOpenMpi;
  int num_proc = 1;
  std::vector<discovery::HostSlots> hosts;
  std::vector<std::string> nics;  // --network-interface(s)
  std::string binding_args;       // replaces "-bind-to none -map-by slot"
  std::string mpi_args;           // appended, split like a shell would
  std::optional<int> ssh_port;
  std::string ssh_identity_file;
  std::string ssh_known_hosts_file;       // -o UserKnownHostsFile=F for mpirun's ssh
  bool ssh_accept_new_host_keys = false;  // -o StrictHostKeyChecking=accept-new
  std::string output_filename;
  bool prefix_timestamp = false;
  bool run_as_root = false;            // adds --allow-run-as-root (Open MPI refuses root otherwise)
  std::vector<std::string> env_names;  // exported with -x NAME (filtered, sorted)
  // Values hvdrun chose for the ranks (OMP_NUM_THREADS of --worker-threads share): Open MPI's
  // -x NAME=VALUE, after the names, so --dry-run shows them; MPICH's ranks inherit mpirun's
  // environment, which has them too.
  std::vector<std::pair<std::string, std::string>> env_settings;
  std::vector<std::string> command;
};

// The argv of mpirun. Open MPI / Spectrum: [--allow-run-as-root] --tag-output -np N
// -H h1:s1,h2:s2 -bind-to none -map-by slot -mca pml ob1 -mca btl ^openib [tree-spawn
// settings for >= 64 hosts] [-mca plm_rsh_args "-p P -i F -o UserKnownHostsFile=K
// -o StrictHostKeyChecking=accept-new"] [-mca btl_tcp_if_include nics
// -x NCCL_SOCKET_IFNAME=nics -x HVD_GLOO_IFACE=nic1] [--output-filename D]
// [--timestamp-output] -x NAME...
// <mpi_args> command; an MCA parameter that mpi_args sets (-mca/--mca NAME VALUE) replaces
// hvdrun's own "-mca NAME ..." (Open MPI refuses a parameter given twice). MPICH / Intel: -l -np N
// -ppn S -hosts h1,h2 [-bootstrap=ssh -bootstrap-exec-args "-p P -i F"] [-iface nic -genv
// NCCL_SOCKET_IFNAME=nic]
// [-outfile-pattern D] <mpi_args> command (every host needs the same slots; one NIC).
// Errors: unknown / missing flavour (suggesting --gloo), unequal slots or several NICs for
// MPICH, unbalanced quotes in mpi_args / binding_args.
Result<std::vector<std::string>> BuildMpirunCommand(const MpirunInputs& inputs);

// Splits `text` into words like a POSIX shell (quotes and backslashes; no expansion).
Result<std::vector<std::string>> ShellSplit(const std::string& text);

// jsrun (LSF): `jsrun --erf_input <rankfile> [--stdio_stderr F --stdio_stdout F] --smpiargs
// '<-mca pml ob1 -mca btl ^openib> <mpi_args>' command`.
std::vector<std::string> BuildJsrunCommand(const std::string& rankfile_path,
                                           const std::string& output_filename,
                                           const std::string& mpi_args,
                                           const std::vector<std::string>& command);

// The jsrun rank file: "overlapping_rs: allow", "cpu_index_using: logical", then per rank
// "rank: R: { hostname: H; cpu: {a-b} ; gpu: * ; mem: * }", each rank on a host getting
// cores_per_host * threads_per_core / gpus_per_host logical CPUs. Error when a host has
// more slots than GPUs.
Result<std::string> BuildJsrunRankfile(const std::vector<discovery::HostSlots>& hosts, int num_proc,
                                       int gpus_per_host, int cores_per_host, int threads_per_core);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_SCHEDULERS_MPIRUN_COMMAND_H_
