#include "launcher/schedulers/mpirun_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace hvd::launcher {
namespace {

constexpr size_t kTreeSpawnHosts = 64;  // Horovod's threshold for plm_rsh_no_tree_spawn

void Add(std::vector<std::string>& argv, std::initializer_list<std::string> words) {
  argv.insert(argv.end(), words.begin(), words.end());
}

std::string SshArgs(const MpirunInputs& in) {
  std::vector<std::string> args;
  if (in.ssh_port) Add(args, {"-p", std::to_string(*in.ssh_port)});
  if (!in.ssh_identity_file.empty()) Add(args, {"-i", in.ssh_identity_file});
  if (!in.ssh_known_hosts_file.empty()) {
    Add(args, {"-o", "UserKnownHostsFile=" + in.ssh_known_hosts_file});
  }
  if (in.ssh_accept_new_host_keys) Add(args, {"-o", "StrictHostKeyChecking=accept-new"});
  return fmt::to_string(fmt::join(args, " "));
}

Status AddWords(std::vector<std::string>& argv, const std::string& text, const char* flag) {
  Result<std::vector<std::string>> words = ShellSplit(text);
  if (!words.ok())
    return Status::InvalidArgument(std::string(flag) + ": " + words.status().message());
  argv.insert(argv.end(), words->begin(), words->end());
  return Status::OK();
}

// The MCA parameters the user sets in `words` (-mca / --mca / -gmca NAME VALUE).
std::set<std::string> UserMcaParams(const std::vector<std::string>& words) {
  std::set<std::string> names;
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if (words[i] == "-mca" || words[i] == "--mca" || words[i] == "-gmca" || words[i] == "--gmca") {
      names.insert(words[i + 1]);
    }
  }
  return names;
}

// Appends "-mca name value" unless the user sets `name` in --mpi-args: Open MPI refuses a
// parameter given twice, and the user's choice wins (e.g. "--mca btl self,tcp").
void AddMca(std::vector<std::string>& argv, const std::set<std::string>& user,
            const std::string& name, const std::string& value) {
  if (user.count(name) == 0) Add(argv, {"-mca", name, value});
}

Result<std::vector<std::string>> OpenMpiCommand(const MpirunInputs& in) {
  Result<std::vector<std::string>> user_words = ShellSplit(in.mpi_args);
  const std::set<std::string> user =
      user_words.ok() ? UserMcaParams(*user_words) : std::set<std::string>{};
  std::vector<std::string> argv = {"mpirun"};
  if (in.run_as_root) argv.push_back("--allow-run-as-root");
  std::vector<std::string> hosts;
  for (const auto& h : in.hosts) hosts.push_back(h.host + ":" + std::to_string(h.slots));
  Add(argv, {"--tag-output", "-np", std::to_string(in.num_proc), "-H",
             fmt::to_string(fmt::join(hosts, ","))});
  if (in.binding_args.empty()) {
    Add(argv, {"-bind-to", "none", "-map-by", "slot"});
  } else {
    HVD_RETURN_IF_ERROR(AddWords(argv, in.binding_args, "--binding-args"));
  }
  if (in.flavor == MpiFlavor::kOpenMpi) {
    AddMca(argv, user, "pml", "ob1");
    AddMca(argv, user, "btl", "^openib");
  }
  if (in.hosts.size() >= kTreeSpawnHosts) {
    AddMca(argv, user, "plm_rsh_no_tree_spawn", "true");
    AddMca(argv, user, "plm_rsh_num_concurrent", std::to_string(in.hosts.size()));
  }
  if (std::string ssh = SshArgs(in); !ssh.empty()) AddMca(argv, user, "plm_rsh_args", ssh);
  if (!in.nics.empty()) {
    AddMca(argv, user, "btl_tcp_if_include", fmt::to_string(fmt::join(in.nics, ",")));
    // HVD_GLOO_IFACE: Gloo data under the MPI controller (HVD_CPU_OPERATIONS=gloo) binds there.
    Add(argv, {"-x", "NCCL_SOCKET_IFNAME=" + fmt::to_string(fmt::join(in.nics, ",")), "-x",
               "HVD_GLOO_IFACE=" + in.nics[0]});
  }
  if (!in.output_filename.empty()) Add(argv, {"--output-filename", in.output_filename});
  if (in.prefix_timestamp) argv.push_back("--timestamp-output");
  std::vector<std::string> names;
  for (const std::string& name : in.env_names) {
    if (IsExportableVariable(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const std::string& name : names) Add(argv, {"-x", name});
  for (const auto& [name, value] : in.env_settings) Add(argv, {"-x", name + "=" + value});
  HVD_RETURN_IF_ERROR(AddWords(argv, in.mpi_args, "--mpi-args"));
  argv.insert(argv.end(), in.command.begin(), in.command.end());
  return argv;
}

Result<std::vector<std::string>> MpichCommand(const MpirunInputs& in) {
  std::vector<std::string> hosts;
  for (const auto& h : in.hosts) {
    if (h.slots != in.hosts.front().slots) {
      return Status::InvalidArgument(
          MpiFlavorName(in.flavor) + " needs the same slots on every host (-ppn), got " + h.host +
          ":" + std::to_string(h.slots) + " and " + in.hosts.front().host + ":" +
          std::to_string(in.hosts.front().slots));
    }
    hosts.push_back(h.host);
  }
  if (in.nics.size() > 1) {
    return Status::InvalidArgument(MpiFlavorName(in.flavor) + " uses one network interface, got " +
                                   fmt::to_string(fmt::join(in.nics, ",")));
  }
  std::vector<std::string> argv = {"mpirun", "-l", "-np", std::to_string(in.num_proc)};
  if (!in.hosts.empty()) {
    Add(argv, {"-ppn", std::to_string(in.hosts.front().slots), "-hosts",
               fmt::to_string(fmt::join(hosts, ","))});
  }
  if (!in.binding_args.empty()) {
    HVD_RETURN_IF_ERROR(AddWords(argv, in.binding_args, "--binding-args"));
  }
  if (std::string ssh = SshArgs(in); !ssh.empty()) {
    Add(argv, {"-bootstrap=ssh", "-bootstrap-exec-args", ssh});
  }
  if (!in.nics.empty()) {
    Add(argv, {"-iface", in.nics.front(), "-genv", "NCCL_SOCKET_IFNAME=" + in.nics.front()});
  }
  if (!in.output_filename.empty()) Add(argv, {"-outfile-pattern", in.output_filename});
  HVD_RETURN_IF_ERROR(AddWords(argv, in.mpi_args, "--mpi-args"));
  argv.insert(argv.end(), in.command.begin(), in.command.end());
  return argv;
}

}  // namespace

MpiFlavor DetectMpiFlavor(std::string_view out) {
  auto has = [&](std::string_view what) { return out.find(what) != std::string_view::npos; };
  if (out.empty()) return MpiFlavor::kMissing;
  if (has("IBM Spectrum MPI")) return MpiFlavor::kSpectrum;
  if (has("Open MPI") || has("OpenRTE")) return MpiFlavor::kOpenMpi;
  if (has("Intel(R) MPI")) return MpiFlavor::kIntel;
  if (has("MPICH") || has("HYDRA")) return MpiFlavor::kMpich;
  return MpiFlavor::kUnknown;
}

std::string MpiFlavorName(MpiFlavor flavor) {
  switch (flavor) {
    case MpiFlavor::kOpenMpi:
      return "Open MPI";
    case MpiFlavor::kSpectrum:
      return "IBM Spectrum MPI";
    case MpiFlavor::kMpich:
      return "MPICH";
    case MpiFlavor::kIntel:
      return "Intel MPI";
    case MpiFlavor::kUnknown:
      return "an unknown MPI";
    case MpiFlavor::kMissing:
      return "no MPI";
  }
  return "?";
}

bool IsExportableVariable(const std::string& name) {
  static const std::string kCuda = "CUDA_VISIBLE_DEVICES";
  if (name.rfind("BASH_FUNC_", 0) == 0) return false;
  if (name == "OLDPWD" || name == "_HOROVOD_SECRET_KEY" || name == "HVD_SECRET_FD") return false;
  return !(name.size() >= kCuda.size() &&
           name.compare(name.size() - kCuda.size(), kCuda.size(), kCuda) == 0);
}

Result<std::vector<std::string>> BuildMpirunCommand(const MpirunInputs& inputs) {
  switch (inputs.flavor) {
    case MpiFlavor::kOpenMpi:
    case MpiFlavor::kSpectrum:
      return OpenMpiCommand(inputs);
    case MpiFlavor::kMpich:
    case MpiFlavor::kIntel:
      return MpichCommand(inputs);
    case MpiFlavor::kMissing:
      return Status::NotFound(
          "--mpi needs mpirun, which is not on PATH; install Open MPI or use --gloo");
    case MpiFlavor::kUnknown:
      break;
  }
  return Status::InvalidArgument(
      "mpirun --version names an MPI implementation hvdrun does not know (Open MPI, Spectrum "
      "MPI, MPICH, Intel MPI); use --gloo");
}

}  // namespace hvd::launcher
