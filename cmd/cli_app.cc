#include "cmd/cli_app.h"

#include <algorithm>
#include <utility>

namespace hvd::cmd {
namespace {

// horovodrun's single-dash multi-letter spellings, which CLI11 cannot name.
struct DashAlias {
  const char* canonical;
  const char* alias;
};
constexpr DashAlias kDashAliases[] = {
    {"--num-proc", "-np"},
    {"--check-build", "-cb"},
    {"--hostfile", "-hostfile"},
    {"--prefix-output-with-timestamp", "-prefix-timestamp"},
};

// Lists every spelling (no "{false}" decorations) and names the command in the usage line,
// which comes before the description.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::vector<std::string> names;
    for (const auto& l : opt->get_lnames()) {
      for (const auto& a : kDashAliases) {
        if ("--" + l == a.canonical) names.push_back(a.alias);
      }
    }
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    return CLI::detail::join(names, ", ");
  }
  std::string make_description(const CLI::App* app) const override { return ""; }
  std::string make_usage(const CLI::App* app, std::string name) const override {
    return "Usage: " + name + " [OPTIONS] [--] COMMAND [ARGS...]\n\n" + app->get_description() +
           "\n";
  }
};

// Adds options to one help group at a time.
class Builder {
 public:
  explicit Builder(CLI::App* app) : app_(app) {}
  void Group(std::string group) { group_ = std::move(group); }
  CLI::Option* Value(const std::string& names, const std::string& type, const std::string& help) {
    return app_->add_option(names, CLI::callback_t{}, help)
        ->type_name(type)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        ->group(group_);
  }
  CLI::Option* Flag(const std::string& names, const std::string& help) {
    return app_->add_flag(names, help)->group(group_);
  }

 private:
  CLI::App* app_;
  std::string group_;
};

void AddBasic(Builder* b) {
  b->Group("Basic");
  b->Flag("-v,--version", "Print the hvdrun version and exit.");
  b->Value("--num-proc", "N", "Total number of processes. Elastic: processes needed to start.");
  b->Flag("--check-build", "Show which frameworks, controllers and tensor operations were built.");
  b->Flag("--disable-cache", "Do not cache the SSH and network interface checks.");
  b->Value(
      "--start-timeout", "SECONDS",
      "Deadline for the checks and for every rank to start (env HVD_START_TIMEOUT, default 30).");
  b->Value("--network-interfaces", "NICS",
           "Comma list of network interfaces to use; skips interface discovery.");
  b->Value("--network-interface", "NIC", "A network interface to use; may be repeated.")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  b->Value("--output-filename", "DIR",
           "Also write each rank's output to DIR/rank.N/{stdout,stderr}.");
  b->Value("--console-ranks", "RANKS",
           "Only these ranks' output on the console, e.g. 0 or 0,4-7 (every rank's still goes "
           "to --output-filename and the failure summary).");
  b->Flag("--verbose", "Print the launch steps and commands.");
  b->Value("--config-file", "FILE",
           "YAML file with parameters; flags given on the command line win.");
  b->Flag("--dry-run", "Print the rank plan and the commands, start nothing.");
  b->Flag("--check",
          "Preflight every host (SSH, hvd-agent version, interface, free port), start nothing.");
  b->Flag("--print-config",
          "Print every HVD_*/HOROVOD_* variable: value in effect and where it came from.");
  b->Value("--timeout", "SECONDS",
           "Stop the job when it has run this long, after every rank printed its Python stacks "
           "(exit 124; env HVD_TIMEOUT, default 0 = no limit).");
  b->Value("--grace-period-seconds", "SECONDS",
           "Wait between SIGTERM and SIGKILL when ending ranks (env HVD_GRACE_PERIOD_SECONDS, "
           "default 5).");
  b->Group("SSH");
  b->Value("-p,--ssh-port", "PORT", "SSH port on all hosts.");
  b->Value("-i,--ssh-identity-file", "FILE", "SSH private key for all hosts.");
  b->Value("--ssh-known-hosts", "FILE",
           "known_hosts file that host keys are checked against (default ~/.ssh/known_hosts).");
  b->Flag("--ssh-accept-new-host-keys",
          "Trust hosts missing from known_hosts and add them (a changed key is still an error).");
}

void AddParamsAndAutotune(Builder* b) {
  b->Group("Tunable parameters");
  b->Value("--fusion-threshold-mb", "MB",
           "Tensor fusion buffer size in MB; 0 disables fusion (default 128).");
  b->Value("--cycle-time-ms", "MS", "Background cycle time in milliseconds (default 1).");
  b->Value("--cache-capacity", "N", "Response cache entries; 0 disables the cache (default 1024).");
  b->Flag("--hierarchical-allreduce,!--no-hierarchical-allreduce",
          "Hierarchical allreduce (fixed for autotune when given).");
  b->Flag("--hierarchical-allgather,!--no-hierarchical-allgather",
          "Hierarchical allgather (fixed for autotune when given).");
  b->Flag("--torus-allreduce,!--no-torus-allreduce", "2D torus allreduce (NCCL).");
  b->Group("Autotune");
  b->Flag("--autotune,!--no-autotune",
          "Tune fusion threshold, cycle time and the flags above with Bayesian optimisation.");
  b->Value("--autotune-log-file", "FILE", "CSV log of autotune samples.");
  b->Value("--autotune-warmup-samples", "N", "Samples discarded at the start (default 3).");
  b->Value("--autotune-steps-per-sample", "N", "Steps per sample (default 10).");
  b->Value("--autotune-bayes-opt-max-samples", "N",
           "Maximum Bayesian optimisation samples (default 20).");
  b->Value("--autotune-gaussian-process-noise", "F",
           "Gaussian process noise in [0, 1] (default 0.8).");
  b->Value("--autotune-cache", "FILE",
           "Store tuned parameters per model signature in FILE and reuse them.");
}

void AddElasticAndTimeline(Builder* b) {
  b->Group("Elastic");
  b->Flag("--elastic",
          "Elastic job: ranks that fail are replaced or dropped and training goes on; also "
          "turned on by --min-np or --host-discovery-script.");
  b->Value("--min-np,--min-num-proc", "N",
           "Minimum processes (default: -np); turns on elastic mode.");
  b->Value("--max-np,--max-num-proc", "N",
           "Maximum processes (default: no limit); needs elastic mode.");
  b->Value("--slots-per-host,--slots", "N",
           "Slots for discovered hosts that do not give a count (default 1).");
  b->Value("--host-discovery-interval", "SECONDS",
           "Run the discovery script this often (env HVD_HOST_DISCOVERY_INTERVAL, default 1).");
  b->Value("--elastic-timeout", "SECONDS",
           "Wait for enough slots after a failure (env HVD_ELASTIC_TIMEOUT, default 600).");
  b->Value("--reset-limit", "N", "Fail the job after this many resets.");
  b->Value("--blacklist-cooldown-range", "",
           "Seconds a failed host stays blacklisted, growing from MIN to MAX.")
      ->expected(2)
      ->delimiter(',')
      ->option_text("MIN MAX");
  b->Group("Timeline");
  b->Value("--timeline-filename,--timeline", "FILE", "Write a Chrome-trace timeline to FILE.");
  b->Flag("--timeline-mark-cycles,!--no-timeline-mark-cycles",
          "Mark background cycles in the timeline.");
  b->Flag("--timeline-all-ranks,!--no-timeline-all-ranks",
          "One row per rank in rank 0's file: the other ranks ship their events to rank 0, "
          "clocks aligned at start-up (costs ~30 % on small fused ops).");
  b->Group("Stall check");
  b->Flag("--stall-check,!--no-stall-check",
          "Report tensors some ranks have not submitted (on by default).");
  b->Value("--stall-check-warning-time-seconds", "SECONDS", "Warn after this stall (default 60).");
  b->Value("--stall-check-shutdown-time-seconds", "SECONDS",
           "Shut down after this stall; 0 = never.");
}

void AddLibraryAndLogging(Builder* b) {
  b->Group("Library options");
  b->Flag("--mpi-threads-disable,!--no-mpi-threads-disable",
          "Initialise MPI with MPI_THREAD_SINGLE.");
  b->Value("--mpi-args", "ARGS", "Extra arguments for mpirun.");
  b->Flag("--tcp", "TCP only: sets NCCL_IB_DISABLE=1 for the ranks.");
  b->Value("--binding-args", "ARGS",
           "Process binding arguments for mpirun, replacing the defaults.");
  b->Value("--num-nccl-streams", "N", "NCCL streams per device (default 1).");
  b->Value("--thread-affinity", "CORES",
           "Core id (or comma list, one per local rank) for the background thread.");
  b->Value("--gloo-timeout-seconds", "SECONDS", "Rendezvous and collective timeout (default 30).");
  b->Value("--bind-to", "core|none",
           "none (default): the kernel places ranks; core: bind each local rank to an even share "
           "of the CPUs (small ops ~10x faster on few cores, training ~15 % slower there).");
  b->Value("--worker-malloc", "tuned|system",
           "tuned (default): the workers' glibc keeps a step's large temporaries mapped "
           "(MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_); system: glibc's defaults.");
  b->Value("--worker-threads", "share|system",
           "share (default): OMP_NUM_THREADS = a host's cores / the ranks there, unless set (torch "
           "sizes each rank's pool to every core); system: torch's default.");
  b->Group("Logging");
  b->Value("--log-level", "LEVEL", "TRACE, DEBUG, INFO, WARNING, ERROR or FATAL.");
  b->Flag("--log-with-timestamp,!--log-without-timestamp",
          "Timestamps in log lines (on by default).");
  b->Group("");  // deprecated spelling, hidden as in horovodrun
  b->Flag("--log-hide-timestamp,!--no-log-hide-timestamp", "Deprecated: --log-without-timestamp.");
  b->Group("Logging");
  b->Flag("--prefix-output-with-timestamp", "Prefix each forwarded output line with a timestamp.");
}

void AddHostsAndController(Builder* b) {
  b->Group("Hosts (one of)");
  b->Value("-H,--hosts", "HOSTS", "host1:slots,host2:slots (default localhost:<np>).");
  b->Value("--hostfile", "FILE", "Lines '<host> slots=<n>'.");
  b->Value("--host-discovery-script", "SCRIPT",
           "Prints 'host[:slots]' lines; turns on elastic mode.");
  b->Group("Controller (one of)");
  b->Flag("--gloo", "Launch with hvdrun's own Gloo-style launcher.");
  b->Flag("--mpi", "Launch with mpirun.");
  b->Flag("--jsrun",
          "Launch with jsrun (LSF): not built yet; hvdrun refuses it (exit 64, nothing started).");
}

}  // namespace

std::unique_ptr<CLI::App> BuildApp() {
  auto app = std::make_unique<CLI::App>(
      "Runs COMMAND as a distributed job: one process per slot, wired together with hvd's "
      "collective runtime. Accepts every horovodrun flag.",
      "hvdrun");
  app->formatter(std::make_shared<HelpFormatter>());
  app->set_help_flag("-h,--help", "Print this help and exit.");
  app->get_option("--help")->group("Basic");
  Builder b(app.get());
  AddBasic(&b);
  AddParamsAndAutotune(&b);
  AddElasticAndTimeline(&b);
  AddLibraryAndLogging(&b);
  AddHostsAndController(&b);
  app->footer("Precedence: command line > --config-file > environment > default. See docs/cli.md.");
  return app;
}

std::vector<OptionShape> OptionShapes(const CLI::App& app) {
  std::vector<OptionShape> shapes;
  for (const CLI::Option* opt : app.get_options()) {
    const auto& negated = opt->get_fnames();
    OptionShape positive{"", {}, opt->get_items_expected_max()};
    for (const auto& l : opt->get_lnames()) {
      if (std::find(negated.begin(), negated.end(), l) != negated.end()) {
        shapes.push_back({"--" + l, {}, 0});
      } else if (positive.canonical.empty()) {
        positive.canonical = "--" + l;
      } else {
        positive.aliases.push_back("--" + l);
      }
    }
    for (const auto& s : opt->get_snames()) positive.aliases.push_back("-" + s);
    for (const auto& a : kDashAliases) {
      if (positive.canonical == a.canonical) positive.aliases.push_back(a.alias);
    }
    shapes.push_back(std::move(positive));
  }
  return shapes;
}

bool Given(const CLI::App& app, const std::string& name) {
  const CLI::Option* opt = app.get_option_no_throw(name);
  return opt != nullptr && opt->count() > 0;
}

std::optional<std::string> LastValue(const CLI::App& app, const std::string& name) {
  std::vector<std::string> all = AllValues(app, name);
  if (all.empty()) return std::nullopt;
  return all.back();
}

std::vector<std::string> AllValues(const CLI::App& app, const std::string& name) {
  const CLI::Option* opt = app.get_option_no_throw(name);
  if (opt == nullptr || opt->count() == 0) return {};
  return opt->results();
}

std::optional<bool> FlagValue(const CLI::App& app, const std::string& name) {
  std::optional<std::string> last = LastValue(app, name);
  if (!last) return std::nullopt;
  return *last != "false";
}

}  // namespace hvd::cmd
