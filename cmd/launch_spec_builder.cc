#include "cmd/launch_spec_builder.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cmd/cli_app.h"
#include "cmd/knob_env.h"
#include "common/edit_distance.h"
#include "common/logging.h"
#include "launcher/worker/worker_malloc.h"
#include "launcher/worker/worker_threads.h"

namespace hvd::cmd {
namespace {

using launcher::Controller;
using launcher::LaunchSpec;

constexpr int kMaxCooldownSeconds = 3600;  // horovodrun's bound for --blacklist-cooldown-range

Status OutOfRange(const std::string& what, const std::string& bound, const std::string& got) {
  return Status::InvalidArgument(what + ": must be " + bound + ", got " + got);
}

// An integer flag within [min, max]; nullopt when not given.
Result<std::optional<int>> BoundedInt(const CLI::App& app, const char* flag, int64_t min,
                                      int64_t max = INT_MAX) {
  std::optional<std::string> text = LastValue(app, flag);
  if (!text) return std::optional<int>();
  HVD_ASSIGN_OR_RETURN(int64_t v, env::ParseInt(*text, flag));
  if (v < min) return OutOfRange(flag, ">= " + std::to_string(min), *text);
  if (v > max) return OutOfRange(flag, "<= " + std::to_string(max), *text);
  return std::optional<int>(static_cast<int>(v));
}

// Seconds from the flag, else from `var` in the environment, else the registry default: at
// most a year (a larger one overflowed the clock: `--timeout 1e12` ended the job at once).
Result<double> Seconds(const CLI::App& app, const env::Environment& env, const char* flag,
                       const char* var, ParsedCommandLine* out) {
  constexpr double kYear = 86400.0 * 365;
  if (std::optional<std::string> text = *flag ? LastValue(app, flag) : std::nullopt) {
    HVD_ASSIGN_OR_RETURN(double v, env::ParseFloat(*text, flag));
    if (v < 0 || v > kYear) return OutOfRange(flag, "in [0, 31536000] (a year)", *text);
    out->settings[var] = {*text, "command line"};
    return v;
  }
  env::Lookup lookup = env.Get(var);
  HVD_ASSIGN_OR_RETURN(double v, env::ParseFloat(lookup.value, lookup.source));
  if (v < 0 || v > kYear) {
    return OutOfRange(lookup.source, "in [0, 31536000] (a year)", lookup.value);
  }
  return v;
}

// "0,4-7" -> {0, 4, 5, 6, 7}: ranks and inclusive ranges, separated by commas; ascending,
// without repeats. At most 65,536 ranks.
Result<std::vector<int>> ParseRankRanges(const std::string& text, const char* flag) {
  constexpr int64_t kMaxRanks = 1 << 16;
  std::set<int> ranks;
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? comma : comma - at);
    const size_t dash = item.find('-');
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument(std::string(flag) + ": '" + item + "' in '" + text +
                                     "': " + why + " (expected ranks like 0 or 0,4-7)");
    };
    int64_t first = -1, last = -1;
    auto number = [](const std::string& digits, int64_t* out) {
      if (digits.empty() || digits.size() > 9 ||
          digits.find_first_not_of("0123456789") != std::string::npos) {
        return false;
      }
      *out = std::stoll(digits);
      return true;
    };
    if (!number(item.substr(0, dash), &first) ||
        (dash != std::string::npos && !number(item.substr(dash + 1), &last))) {
      return bad("not a rank or a range of ranks");
    }
    if (dash == std::string::npos) last = first;
    if (last < first) return bad("the range ends before it starts");
    if (last - first + 1 + static_cast<int64_t>(ranks.size()) > kMaxRanks) {
      return bad("more than 65536 ranks");
    }
    for (int64_t r = first; r <= last; ++r) ranks.insert(static_cast<int>(r));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return std::vector<int>(ranks.begin(), ranks.end());
}

Status ReadCooldown(const CLI::App& app, LaunchSpec* spec) {
  const char* flag = "--blacklist-cooldown-range";
  std::vector<std::string> values = AllValues(app, flag);
  if (values.size() < 2) return Status::OK();
  HVD_ASSIGN_OR_RETURN(int64_t min, env::ParseInt(values[values.size() - 2], flag));
  HVD_ASSIGN_OR_RETURN(int64_t max, env::ParseInt(values.back(), flag));
  const std::string got = std::to_string(min) + " " + std::to_string(max);
  if (min < 1) return OutOfRange(std::string(flag) + " MIN", ">= 1", got);
  if (max > kMaxCooldownSeconds) return OutOfRange(std::string(flag) + " MAX", "<= 3600", got);
  if (min > max) return OutOfRange(std::string(flag), "MIN <= MAX", got);
  spec->blacklist_cooldown_range = std::make_pair(static_cast<int>(min), static_cast<int>(max));
  return Status::OK();
}

Status ReadWhere(const CLI::App& app, LaunchSpec* spec) {
  HVD_ASSIGN_OR_RETURN(spec->num_proc, BoundedInt(app, "--num-proc", 1));
  spec->hosts = LastValue(app, "--hosts").value_or("");
  spec->hostfile = LastValue(app, "--hostfile").value_or("");
  spec->host_discovery_script = LastValue(app, "--host-discovery-script").value_or("");
  spec->elastic_flag = Given(app, "--elastic");
  HVD_ASSIGN_OR_RETURN(spec->min_num_proc, BoundedInt(app, "--min-np", 1));
  HVD_ASSIGN_OR_RETURN(spec->max_num_proc, BoundedInt(app, "--max-np", 1));
  HVD_ASSIGN_OR_RETURN(spec->slots_per_host, BoundedInt(app, "--slots-per-host", 1));
  HVD_ASSIGN_OR_RETURN(spec->reset_limit, BoundedInt(app, "--reset-limit", 0));
  if (spec->min_num_proc && spec->max_num_proc && *spec->max_num_proc < *spec->min_num_proc) {
    return OutOfRange("--max-np", ">= --min-np (" + std::to_string(*spec->min_num_proc) + ")",
                      std::to_string(*spec->max_num_proc));
  }
  return ReadCooldown(app, spec);
}

// Elastic-only flags make sense only in elastic mode, and -np / --min-np / --max-np must
// nest. -np (processes to start with) and --min-np default to each other; with neither, a
// fixed host list starts on all its slots (launcher/elastic_run.cc) and a discovery script
// is an error, since nothing says how many hosts to wait for.
// In a static job the elastic-only flags are accepted and ignored, with a warning, as
// horovodrun accepts and ignores them (a wrapper script that always passes --elastic-timeout
// works unchanged); they were a usage error until 2026-12-01.
Status CheckElastic(const CLI::App& app, LaunchSpec* spec, std::vector<std::string>* warnings) {
  if (!spec->elastic()) {
    for (const char* flag :
         {"--max-np", "--slots-per-host", "--reset-limit", "--blacklist-cooldown-range",
          "--host-discovery-interval", "--elastic-timeout"}) {
      if (Given(app, flag)) {
        warnings->push_back(std::string(flag) +
                            " applies to elastic jobs only; ignored in this static job (add "
                            "--min-np N, --host-discovery-script SCRIPT or --elastic for an "
                            "elastic one)");
      }
    }
    return Status::OK();
  }
  if (spec->controller == Controller::kMpi || spec->controller == Controller::kJsrun) {
    return Status::InvalidArgument(
        "elastic mode runs ranks under hvdrun's own launcher; it cannot be combined with " +
        std::string(spec->controller == Controller::kMpi ? "--mpi" : "--jsrun"));
  }
  if (!spec->num_proc) spec->num_proc = spec->min_num_proc;
  if (!spec->min_num_proc) spec->min_num_proc = spec->num_proc;
  if (!spec->num_proc && !spec->host_discovery_script.empty()) {
    return Status::InvalidArgument(
        "--host-discovery-script needs -np N or --min-np N: how many processes to start with");
  }
  if (spec->num_proc && *spec->num_proc < *spec->min_num_proc) {
    return OutOfRange("-np", ">= --min-np (" + std::to_string(*spec->min_num_proc) + ")",
                      std::to_string(*spec->num_proc));
  }
  if (spec->num_proc && spec->max_num_proc && *spec->max_num_proc < *spec->num_proc) {
    return OutOfRange("--max-np", ">= -np (" + std::to_string(*spec->num_proc) + ")",
                      std::to_string(*spec->max_num_proc));
  }
  return Status::OK();
}

Status ReadElasticTimes(const CLI::App& app, const env::Environment& env, ParsedCommandLine* out) {
  LaunchSpec* spec = &out->spec;
  HVD_ASSIGN_OR_RETURN(spec->elastic_timeout_s,
                       Seconds(app, env, "--elastic-timeout", "HVD_ELASTIC_TIMEOUT", out));
  // Passed on to the workers as Horovod does (HOROVOD_ELASTIC_TIMEOUT reaches its workers);
  // they check it but no longer bound their wait for the driver by it (since 2026-12-01,
  // runtime/elastic_session.cc: the driver alone decides). From the environment they inherit
  // it, from the flag only through this.
  if (std::optional<std::string> text = LastValue(app, "--elastic-timeout")) {
    spec->worker_env["HVD_ELASTIC_TIMEOUT"] = *text;
  }
  HVD_ASSIGN_OR_RETURN(spec->discovery_interval_s, Seconds(app, env, "--host-discovery-interval",
                                                           "HVD_HOST_DISCOVERY_INTERVAL", out));
  HVD_ASSIGN_OR_RETURN(spec->discovery_timeout_s,
                       Seconds(app, env, "", "HVD_HOST_DISCOVERY_TIMEOUT", out));
  if (spec->elastic_timeout_s <= 0) {  // the workers refuse 0 too (runtime_config.cc)
    return OutOfRange(LastValue(app, "--elastic-timeout") ? "--elastic-timeout"
                                                          : env.Get("HVD_ELASTIC_TIMEOUT").source,
                      "> 0", std::to_string(spec->elastic_timeout_s));
  }
  if (spec->discovery_interval_s <= 0) {
    return OutOfRange("--host-discovery-interval", "> 0",
                      std::to_string(spec->discovery_interval_s));
  }
  if (spec->discovery_timeout_s <= 0) {
    return OutOfRange("HVD_HOST_DISCOVERY_TIMEOUT", "> 0",
                      std::to_string(spec->discovery_timeout_s));
  }
  if (spec->elastic()) out->settings["HVD_ELASTIC"] = {"1", "command line"};
  return Status::OK();
}

// --network-interfaces a,b and any number of --network-interface c: their union, in order.
void ReadInterfaces(const CLI::App& app, LaunchSpec* spec, std::vector<std::string>* warnings) {
  std::vector<std::string> lists = AllValues(app, "--network-interfaces");
  for (const std::string& one : AllValues(app, "--network-interface")) {
    if (one.find(',') != std::string::npos) {
      warnings->push_back(
          "--network-interface with a comma list is deprecated; use "
          "--network-interfaces " +
          one);
    }
    lists.push_back(one);
  }
  for (const std::string& list : lists) {
    std::stringstream in(list);
    std::string nic;
    while (std::getline(in, nic, ',')) {
      auto& nics = spec->network_interfaces;
      if (!nic.empty() && std::find(nics.begin(), nics.end(), nic) == nics.end()) {
        nics.push_back(nic);
      }
    }
  }
}

Status ReadRemote(const CLI::App& app, ParsedCommandLine* out) {
  LaunchSpec* spec = &out->spec;
  HVD_ASSIGN_OR_RETURN(spec->ssh_port, BoundedInt(app, "--ssh-port", 1, 65535));
  spec->ssh_identity_file = LastValue(app, "--ssh-identity-file").value_or("");
  spec->ssh_known_hosts_file = LastValue(app, "--ssh-known-hosts").value_or("");
  spec->ssh_accept_new_host_keys = Given(app, "--ssh-accept-new-host-keys");
  spec->disable_cache = Given(app, "--disable-cache");
  ReadInterfaces(app, spec, &out->warnings);
  return Status::OK();
}

void ReadController(const CLI::App& app, const Knobs& knobs,
                    std::optional<Controller> config_controller, ParsedCommandLine* out) {
  LaunchSpec* spec = &out->spec;
  std::string source = "command line";
  if (Given(app, "--gloo")) {
    spec->controller = Controller::kGloo;
  } else if (Given(app, "--mpi")) {
    spec->controller = Controller::kMpi;
  } else if (Given(app, "--jsrun")) {
    spec->controller = Controller::kJsrun;
  } else if (config_controller) {
    spec->controller = *config_controller;
    source = "config file " + LastValue(app, "--config-file").value_or("");
  }
  if (spec->controller != Controller::kDefault) {
    // jsrun starts MPI ranks; the runtime's controller is MPI.
    out->settings["HVD_CONTROLLER"] = {spec->controller == Controller::kGloo ? "gloo" : "mpi",
                                       source};
  }
  spec->mpi_args = LastValue(app, "--mpi-args").value_or("");
  spec->binding_args = LastValue(app, "--binding-args").value_or("");
  spec->tcp = knobs.tcp.value.value_or(false);
}

// hvdrun's own log settings: the knobs (flag or config), else HVD_LOG_LEVEL/HVD_LOG_HIDE_TIME.
void ReadLogging(const env::Environment& env, const Knobs& knobs, ParsedCommandLine* out) {
  LaunchSpec* spec = &out->spec;
  if (knobs.log_level.value) {
    spec->log_level = *knobs.log_level.value;
  } else if (env.IsSet("HVD_LOG_LEVEL")) {
    env::Lookup l = env.Get("HVD_LOG_LEVEL");
    Result<log::Level> level = log::ParseLevel(l.value);
    if (level.ok()) {
      spec->log_level = log::LevelName(*level);
    } else {
      out->warnings.push_back(l.source + ": " + level.status().message() + "; using WARNING");
      // The ranks too, and said once (here), not by each rank again.
      for (const char* name : {"HVD_LOG_LEVEL", "HOROVOD_LOG_LEVEL"}) {
        spec->worker_env[name] = "WARNING";
      }
      out->settings["HVD_LOG_LEVEL"] = {
          "WARNING", l.source + " (unknown level '" + l.value + "' ignored, as Horovod does)"};
    }
  }
  if (knobs.log_with_timestamp.value) {
    spec->log_with_timestamp = *knobs.log_with_timestamp.value;
  } else {
    Result<bool> hide = env.GetBool("HVD_LOG_HIDE_TIME");
    if (hide.ok())
      spec->log_with_timestamp = !*hide;
    else
      out->warnings.push_back(hide.status().message() + "; showing timestamps");
  }
}

Status ReadJobControl(const CLI::App& app, const env::Environment& env, ParsedCommandLine* out) {
  LaunchSpec* spec = &out->spec;
  HVD_ASSIGN_OR_RETURN(spec->start_timeout_s,
                       Seconds(app, env, "--start-timeout", "HVD_START_TIMEOUT", out));
  HVD_RETURN_IF_ERROR(ReadElasticTimes(app, env, out));
  HVD_ASSIGN_OR_RETURN(spec->grace_period_s, Seconds(app, env, "--grace-period-seconds",
                                                     "HVD_GRACE_PERIOD_SECONDS", out));
  HVD_ASSIGN_OR_RETURN(spec->timeout_s, Seconds(app, env, "--timeout", "HVD_TIMEOUT", out));
  if (spec->timeout_s > 0 && spec->controller == Controller::kMpi) {
    return Status::InvalidArgument(
        "--timeout (HVD_TIMEOUT) needs hvdrun's own launcher; under --mpi give mpirun its own: "
        "--mpi-args '--timeout N --get-stack-traces'");
  }
  env::Lookup heartbeat = env.Get("HVD_HEARTBEAT_TIMEOUT_SECONDS");
  HVD_ASSIGN_OR_RETURN(spec->heartbeat_timeout_s,
                       env::ParseFloat(heartbeat.value, heartbeat.source));
  if (!(spec->heartbeat_timeout_s >= 0 && spec->heartbeat_timeout_s <= 86400)) {
    return OutOfRange(heartbeat.source, "in [0, 86400]", heartbeat.value);  // the runtime's
  }
  spec->output_filename = LastValue(app, "--output-filename").value_or("");
  if (std::optional<std::string> ranks = LastValue(app, "--console-ranks")) {
    HVD_ASSIGN_OR_RETURN(spec->console_ranks, ParseRankRanges(*ranks, "--console-ranks"));
  }
  if (!spec->console_ranks.empty() && spec->controller == Controller::kMpi) {
    return Status::InvalidArgument(
        "--console-ranks needs hvdrun's own launcher: under --mpi, mpirun prints the ranks' "
        "output");
  }
  spec->prefix_timestamp = Given(app, "--prefix-output-with-timestamp");
  spec->verbose = Given(app, "--verbose");
  spec->dry_run = Given(app, "--dry-run");
  spec->check = Given(app, "--check");
  return Status::OK();
}

void WriteWorkerEnv(const Knobs& knobs, ParsedCommandLine* out) {
  std::vector<EnvAssignment> assignments = KnobEnv(knobs);
  WriteBothNames(assignments, &out->spec.worker_env);
  for (const EnvAssignment& a : assignments) {
    if (env::FindVar(a.var) != nullptr) out->settings[a.var] = {a.value, a.source};
  }
}

// A worker policy hvdrun decides (--worker-malloc, --worker-threads): the knob (flag or config),
// else the variable `var` in hvdrun's environment, else `fallback`. `source` names where it
// came from, as errors say it; `shown_source` as --print-config does.
struct WorkerPolicy {
  std::string value;
  std::string source;
  std::string shown_source;
};

WorkerPolicy ResolveWorkerPolicy(const Knob<std::string>& knob, const env::Environment& env,
                                 const char* var, const char* fallback) {
  if (knob.value) return {*knob.value, knob.Where(), knob.Where()};
  if (env.IsSet(var)) return {env.Get(var).value, var, std::string("environment variable ") + var};
  return {fallback, "default", "default"};
}

// The allocator settings of launcher/worker/worker_malloc.h: the knob (flag or config), else
// HVD_WORKER_MALLOC, else tuned. What it adds goes into every worker's environment and is
// shown by --dry-run; --print-config shows the policy and where it came from (the knob's
// setting is recorded with the others by WriteWorkerEnv).
Status WriteWorkerMalloc(const env::Environment& env, const Knobs& knobs, ParsedCommandLine* out) {
  const WorkerPolicy policy =
      ResolveWorkerPolicy(knobs.worker_malloc, env, launcher::kWorkerMallocVar, "tuned");
  HVD_ASSIGN_OR_RETURN(auto vars,
                       launcher::WorkerMallocVars(policy.value, policy.source, env.all()));
  if (policy.value == "tuned" && vars.empty()) {
    // The user configured the allocator: say so in --print-config, where a user looking for
    // the MALLOC_* variables that --dry-run does not show would look.
    out->settings[launcher::kWorkerMallocVar] = {
        "tuned, nothing added: " + launcher::UserAllocatorSetting(env.all()), policy.shown_source};
  }
  for (auto& [name, value] : vars) out->spec.worker_env.emplace(name, std::move(value));
  return Status::OK();
}

// The threads policy of launcher/worker/worker_threads.h: the knob (flag or config), else
// HVD_WORKER_THREADS, else share. Every worker gets the policy (a remote host's hvd-agent applies
// it there); OMP_NUM_THREADS itself is computed per host at launch (--dry-run shows this
// host's).
Status WriteWorkerThreads(const env::Environment& env, const Knobs& knobs, ParsedCommandLine* out) {
  const WorkerPolicy policy =
      ResolveWorkerPolicy(knobs.worker_threads, env, launcher::kWorkerThreadsVar, "share");
  HVD_RETURN_IF_ERROR(launcher::CheckWorkerThreadsPolicy(policy.value, policy.source));
  // The default, written so another host's agent applies it too; the knob's is written with the
  // others, the variable's inherited.
  if (policy.source == "default") {
    out->spec.worker_env.emplace(launcher::kWorkerThreadsVar, policy.value);
  }
  std::optional<std::string> omp = env.Raw("OMP_NUM_THREADS");  // not one of hvd's variables
  if (policy.value == "share" && omp) {
    out->settings[launcher::kWorkerThreadsVar] = {
        "share, nothing added: OMP_NUM_THREADS is set (" + *omp + ")", policy.shown_source};
  }
  return Status::OK();
}

// Options that only qualify another one do nothing without it: said, not ignored (Horovod
// ignores them silently).
void WarnAboutIdleOptions(const env::Environment& env, const Knobs& knobs, ParsedCommandLine* out) {
  Result<bool> autotune_env = env.GetBool("HVD_AUTOTUNE");
  const bool autotune = knobs.autotune.value.value_or(autotune_env.ok() && *autotune_env);
  std::vector<std::string> idle;
  for (const Knob<std::string>* knob : {&knobs.autotune_log_file, &knobs.autotune_cache}) {
    if (knob->value) idle.push_back(knob->Where());
  }
  for (const Knob<int64_t>* knob :
       {&knobs.autotune_warmup_samples, &knobs.autotune_steps_per_sample,
        &knobs.autotune_bayes_opt_max_samples}) {
    if (knob->value) idle.push_back(knob->Where());
  }
  if (knobs.autotune_gaussian_process_noise.value) {
    idle.push_back(knobs.autotune_gaussian_process_noise.Where());
  }
  for (const std::string& where : idle) {
    if (!autotune) {
      out->warnings.push_back(where +
                              " does nothing without --autotune (or HVD_AUTOTUNE=1); "
                              "ignored");
    }
  }
  const bool timeline =
      knobs.timeline_filename.value.has_value() || !env.Get("HVD_TIMELINE").value.empty();
  for (const Knob<bool>* knob : {&knobs.timeline_mark_cycles, &knobs.timeline_all_ranks}) {
    if (knob->value.value_or(false) && !timeline) {
      out->warnings.push_back(knob->Where() +
                              " does nothing without --timeline-filename (or HVD_TIMELINE); "
                              "ignored");
    }
  }
}

// A timeline file whose directory does not exist here: a rank 0 on this machine cannot write it,
// and the runtime says so only in rank 0's log and goes on without one (as Horovod does), which
// a user finds out after the run. Said at the start (rank 0 may run on another host, where the
// directory may exist: a warning). DYNAMIC is hvd.start_timeline's, not a path.
void WarnAboutTimelinePath(const env::Environment& env, const Knobs& knobs,
                           ParsedCommandLine* out) {
  const env::Lookup from_env = env.Get("HVD_TIMELINE");
  const std::string path = knobs.timeline_filename.value.value_or(from_env.value);
  if (path.empty() || path == "DYNAMIC") return;
  const std::string where =
      knobs.timeline_filename.value ? knobs.timeline_filename.Where() : from_env.source;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (dir.empty() || std::filesystem::is_directory(dir, ec)) return;
  out->warnings.push_back(where + " '" + path + "': there is no directory '" + dir.string() +
                          "' on this machine, so a rank 0 here will write no timeline");
}

// An HVD_* or HOROVOD_* variable that nothing reads, whose name is near one that is read: a typo
// (HOROVOD_FUSION_TRESHOLD), or hvd's own variable under Horovod's prefix
// (HOROVOD_WORKER_THREADS). Horovod, reading no such name either, ignores it without a word, and
// the job runs with the default. Said, with the variables it may have meant; names near none
// (build-time variables, HOROVOD_CCL_*, a test harness's own) pass silently.
void WarnAboutMisspelledVariables(const env::Environment& env, ParsedCommandLine* out) {
  constexpr size_t kLimit = 2;
  auto words = [](std::string_view name) { return name.substr(name.find('_') + 1); };
  for (const auto& [name, value] : env.all()) {
    if (!(name.starts_with("HVD_") || name.starts_with("HOROVOD_")) || env::FindVar(name)) {
      continue;
    }
    size_t best = kLimit + 1;
    std::set<std::string> guesses;
    for (const env::VarSpec& spec : env::AllVars()) {
      for (std::string_view known :
           {std::string_view(spec.name), std::string_view(spec.horovod_alias)}) {
        if (known.empty()) continue;
        // The same words under the other prefix count as one edit
        const size_t cost = words(known) == words(name) ? 1 : EditDistance(name, known, kLimit);
        if (cost > kLimit || cost > best) continue;
        if (cost < best) guesses.clear();
        best = cost;
        guesses.emplace(known);
      }
    }
    if (guesses.empty() || guesses.size() > 3) continue;
    out->warnings.push_back(name + " is set, but hvd reads no such variable (did you mean " +
                            GuessList({guesses.begin(), guesses.end()}) + "?); ignored");
  }
}

}  // namespace

Status BuildLaunchSpec(const CLI::App& app, const env::Environment& env, const Knobs& knobs,
                       std::optional<Controller> config_controller, ParsedCommandLine* out) {
  HVD_RETURN_IF_ERROR(ReadWhere(app, &out->spec));
  HVD_RETURN_IF_ERROR(ReadRemote(app, out));
  ReadController(app, knobs, config_controller, out);
  HVD_RETURN_IF_ERROR(CheckElastic(app, &out->spec, &out->warnings));
  HVD_RETURN_IF_ERROR(ReadJobControl(app, env, out));
  ReadLogging(env, knobs, out);
  WarnAboutIdleOptions(env, knobs, out);
  WarnAboutTimelinePath(env, knobs, out);
  WarnAboutMisspelledVariables(env, out);
  WriteWorkerEnv(knobs, out);
  HVD_RETURN_IF_ERROR(WriteWorkerThreads(env, knobs, out));
  return WriteWorkerMalloc(env, knobs, out);
}

}  // namespace hvd::cmd
