#include "cmd/knob_env.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <system_error>

#include "common/env_registry.h"

namespace hvd::cmd {
namespace {

constexpr int64_t kBytesPerMb = 1024 * 1024;

std::string BoolText(bool b) { return b ? "1" : "0"; }

class Assignments {
 public:
  template <typename T>
  void Add(const char* var, const Knob<T>& knob, std::string value) {
    std::string source =
        knob.origin == Origin::kConfigFile ? "config file " + knob.config_path : "command line";
    out_.push_back({var, std::move(value), std::move(source)});
  }
  void AddInt(const char* var, const Knob<int64_t>& knob) {
    if (knob.value) Add(var, knob, std::to_string(*knob.value));
  }
  void AddFloat(const char* var, const Knob<double>& knob) {
    if (knob.value) Add(var, knob, FormatPythonFloat(*knob.value));
  }
  void AddBool(const char* var, const Knob<bool>& knob) {
    if (knob.value) Add(var, knob, BoolText(*knob.value));
  }
  void AddString(const char* var, const Knob<std::string>& knob) {
    if (knob.value) Add(var, knob, *knob.value);
  }
  std::vector<EnvAssignment> Take() { return std::move(out_); }

 private:
  std::vector<EnvAssignment> out_;
};

void AssignParams(const Knobs& k, Assignments* a) {
  if (k.fusion_threshold_mb.value) {
    a->Add("HVD_FUSION_THRESHOLD", k.fusion_threshold_mb,
           std::to_string(*k.fusion_threshold_mb.value * kBytesPerMb));
  }
  a->AddFloat("HVD_CYCLE_TIME", k.cycle_time_ms);
  a->AddInt("HVD_CACHE_CAPACITY", k.cache_capacity);
  a->AddBool("HVD_HIERARCHICAL_ALLREDUCE", k.hierarchical_allreduce);
  a->AddBool("HVD_HIERARCHICAL_ALLGATHER", k.hierarchical_allgather);
  a->AddBool("HVD_TORUS_ALLREDUCE", k.torus_allreduce);
}

// The autotune options are passed on whenever given: autotune may be on from the environment
// (HVD_AUTOTUNE=1 or HOROVOD_AUTOTUNE=1 exported to hvdrun), and until 2026-12-01 they were then
// dropped without a word. Without autotune the runtime does not read them (and hvdrun warns).
void AssignAutotune(const Knobs& k, Assignments* a) {
  a->AddBool("HVD_AUTOTUNE", k.autotune);
  a->AddString("HVD_AUTOTUNE_LOG", k.autotune_log_file);
  a->AddInt("HVD_AUTOTUNE_WARMUP_SAMPLES", k.autotune_warmup_samples);
  a->AddInt("HVD_AUTOTUNE_STEPS_PER_SAMPLE", k.autotune_steps_per_sample);
  a->AddInt("HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", k.autotune_bayes_opt_max_samples);
  a->AddFloat("HVD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", k.autotune_gaussian_process_noise);
  a->AddString("HVD_AUTOTUNE_CACHE", k.autotune_cache);
}

void AssignTimelineAndStall(const Knobs& k, Assignments* a) {
  a->AddString("HVD_TIMELINE", k.timeline_filename);
  a->AddBool("HVD_TIMELINE_MARK_CYCLES", k.timeline_mark_cycles);  // also for HVD_TIMELINE
  a->AddBool("HVD_TIMELINE_ALL_RANKS", k.timeline_all_ranks);
  if (k.stall_check.value) {
    a->Add("HVD_STALL_CHECK_DISABLE", k.stall_check, BoolText(!*k.stall_check.value));
  }
  a->AddInt("HVD_STALL_CHECK_TIME_SECONDS", k.stall_check_warning_time_seconds);
  a->AddInt("HVD_STALL_SHUTDOWN_TIME_SECONDS", k.stall_check_shutdown_time_seconds);
}

void AssignLibraryAndLogging(const Knobs& k, Assignments* a) {
  a->AddBool("HVD_MPI_THREADS_DISABLE", k.mpi_threads_disable);
  a->AddInt("HVD_NUM_NCCL_STREAMS", k.num_nccl_streams);
  a->AddString("HVD_THREAD_AFFINITY", k.thread_affinity);
  a->AddInt("HVD_GLOO_TIMEOUT_SECONDS", k.gloo_timeout_seconds);
  a->AddString("HVD_BIND_TO", k.bind_to);
  a->AddString("HVD_WORKER_MALLOC", k.worker_malloc);
  a->AddString("HVD_WORKER_THREADS", k.worker_threads);
  if (k.tcp.value.value_or(false)) a->Add("NCCL_IB_DISABLE", k.tcp, "1");
  a->AddString("HVD_LOG_LEVEL", k.log_level);
  if (k.log_with_timestamp.value) {
    a->Add("HVD_LOG_HIDE_TIME", k.log_with_timestamp, BoolText(!*k.log_with_timestamp.value));
  }
}

}  // namespace

std::vector<EnvAssignment> KnobEnv(const Knobs& knobs) {
  Assignments a;
  AssignParams(knobs, &a);
  AssignAutotune(knobs, &a);
  AssignTimelineAndStall(knobs, &a);
  AssignLibraryAndLogging(knobs, &a);
  return a.Take();
}

void WriteBothNames(const std::vector<EnvAssignment>& assignments,
                    std::map<std::string, std::string>* env) {
  for (const auto& a : assignments) {
    (*env)[a.var] = a.value;
    const env::VarSpec* spec = env::FindVar(a.var);
    if (spec != nullptr && spec->horovod_alias[0] != '\0') (*env)[spec->horovod_alias] = a.value;
  }
}

std::string FormatPythonFloat(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  if (ec != std::errc()) return std::to_string(value);
  std::string_view sci(buf, static_cast<size_t>(end - buf));  // "-1.2345e+01"
  std::string sign;
  if (sci.front() == '-') {
    sign = "-";
    sci.remove_prefix(1);
  }
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  const int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
  const int point = exponent + 1;  // digits before the decimal point
  const int n = static_cast<int>(digits.size());
  if (point > -4 && point <= 16) {
    if (point <= 0) return sign + "0." + std::string(-point, '0') + digits;
    if (point >= n) return sign + digits + std::string(point - n, '0') + ".0";
    return sign + digits.substr(0, point) + "." + digits.substr(point);
  }
  std::string mantissa = digits.substr(0, 1);
  if (n > 1) mantissa += "." + digits.substr(1);
  std::string exp_digits = std::to_string(std::abs(exponent));
  if (exp_digits.size() < 2) exp_digits = "0" + exp_digits;
  return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + exp_digits;
}

}  // namespace hvd::cmd
