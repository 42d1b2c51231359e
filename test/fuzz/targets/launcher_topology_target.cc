// Target "launcher_topology": the variables another launcher or a scheduler sets for a rank and
// that hvd reads outside the environment registry's declared ones: Open MPI's
// OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE} and MPICH/Intel MPI's PMI_RANK, PMI_SIZE,
// MPI_LOCALRANKID, MPI_LOCALNRANKS (libhvd's init under mpirun: LoadRuntimeConfig, i.e.
// LoadMpirunTopology), and Slurm's SLURM_JOB_ID / SLURM_JOBID / SLURM_JOB_NODELIST /
// SLURM_NODELIST (hvdrun inside an allocation: DetectSrunLaunch, then SrunAgentArgv).
//
// The input is records, each a byte (the variable: kNames[b % count]) and its value up to a
// newline. PATH is one of two fixed values (a byte's bit), not the input's: a search of the
// input's PATH would stat arbitrary paths.
//
// Invariants: a topology libhvd accepts is consistent (0 <= rank < size, 0 <= local rank <
// local size <= size, 0 <= cross rank < cross size); a refusal names a variable the input set
// or says which one is not set;
// an srun launch is only taken with a Slurm job id of digits, and its argv names that job and
// the host.
#include <map>
#include <string>

#include "common/check.h"
#include "common/env_registry.h"
#include "launcher/schedulers/srun_command.h"
#include "runtime/runtime_config.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

constexpr const char* kNames[] = {"OMPI_COMM_WORLD_RANK",
                                  "OMPI_COMM_WORLD_SIZE",
                                  "OMPI_COMM_WORLD_LOCAL_RANK",
                                  "OMPI_COMM_WORLD_LOCAL_SIZE",
                                  "PMI_RANK",
                                  "PMI_SIZE",
                                  "MPI_LOCALRANKID",
                                  "MPI_LOCALNRANKS",
                                  "HVD_RANK",
                                  "HVD_SIZE",
                                  "HVD_LOCAL_RANK",
                                  "HVD_LOCAL_SIZE",
                                  "HVD_CROSS_RANK",
                                  "HVD_CROSS_SIZE",
                                  "HVD_HOSTNAME",
                                  "SLURM_JOB_ID",
                                  "SLURM_JOBID",
                                  "SLURM_JOB_NODELIST",
                                  "SLURM_NODELIST"};

bool NamesOneOf(const std::string& message, const std::map<std::string, std::string>& vars) {
  for (const auto& [name, value] : vars) {
    if (message.find(name) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::string FuzzLauncherTopology(std::string_view input) {
  FuzzInput in(input);
  const bool usr_bin = (in.Byte() & 1) != 0;
  std::map<std::string, std::string> vars;
  while (!in.empty()) {
    const char* name = kNames[in.Byte() % std::size(kNames)];
    vars[name] = std::string(in.Until('\n'));
  }
  const std::map<std::string, std::string> given = vars;
  vars["PATH"] = usr_bin ? "/usr/bin:/bin" : "/nonexistent";
  const env::Environment env = env::Environment::FromMap(vars);

  std::string outcome;
  Result<runtime::RuntimeConfig> config = runtime::LoadRuntimeConfig(env);
  Note(&outcome, config.status());
  if (config.ok()) {
    const runtime::RuntimeConfig& c = *config;
    HVD_CHECK(c.size >= 1 && c.rank >= 0 && c.rank < c.size) << c.rank << " " << c.size;
    HVD_CHECK(c.local_size >= 1 && c.local_size <= c.size && c.local_rank >= 0 &&
              c.local_rank < c.local_size);
    HVD_CHECK(c.cross_size >= 1 && c.cross_rank >= 0 && c.cross_rank < c.cross_size);
  } else {
    // A variable the input set, or one it did not that the others need ("... is not set"; an
    // HVD_ topology variable, required without a launcher's)
    const std::string& message = config.status().message();
    HVD_CHECK(NamesOneOf(message, given) || message.find(" is not set") != std::string::npos ||
              message.find("HVD_") != std::string::npos)
        << message;
  }

  std::string why_not;
  const std::optional<launcher::SrunLaunch> srun =
      launcher::DetectSrunLaunch({"node1"}, env, &why_not);
  if (srun) {
    HVD_CHECK(!srun->job_id.empty() &&
              srun->job_id.find_first_not_of("0123456789") == std::string::npos)
        << srun->job_id;
    const std::vector<std::string> argv =
        launcher::SrunAgentArgv(*srun, "node1", "/opt/hvd/bin/hvd-agent");
    HVD_CHECK(argv.size() > 2 && argv[1] == "--jobid=" + srun->job_id);
    HVD_CHECK(argv.back() == "/opt/hvd/bin/hvd-agent");
  } else {
    Note(&outcome, why_not);
  }
  return outcome;
}

}  // namespace hvd::fuzz
