#include "test/multiproc/gloo_job.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "common/kv_client.h"
#include "runtime/gloo_communicator.h"

namespace hvd::test {
namespace {
std::atomic<int> g_job_counter{0};
}

GlooJob::GlooJob(Options options) : options_(std::move(options)) {
  for (size_t i = 0; i < key_.size(); ++i) key_[i] = static_cast<uint8_t>(i * 7 + 1);
  job_id_ = "gloo-multiproc-" + std::to_string(getpid()) + "-" + std::to_string(g_job_counter++);
  launcher::RendezvousServerOptions server_options;
  server_options.key = key_;
  server_options.job_id = job_id_;
  auto server = launcher::RendezvousServer::Start(server_options);
  if (!server.ok()) {
    error_ = server.status().ToString();
    return;
  }
  server_ = std::move(server).value();
}

GlooJob::~GlooJob() { KillAll(SIGKILL); }

bool GlooJob::IsVictim(int rank) const {
  for (int v : options_.victims) {
    if (v == rank) return true;
  }
  return false;
}

void GlooJob::KillAll(int signal) {
  for (pid_t pid : children_) {
    if (pid > 0) {
      kill(pid, signal);
      if (signal == SIGKILL) waitpid(pid, nullptr, 0);
    }
  }
  if (signal == SIGKILL) children_.clear();
}

void GlooJob::RunChild(int rank, const Body& body) {
  alarm(options_.child_alarm);
  auto kv = control::KvClient::Connect("127.0.0.1", server_->port(), key_, job_id_,
                                       std::chrono::seconds(10));
  if (!kv.ok()) {
    std::fprintf(stderr, "rank %d: kv connect: %s\n", rank, kv.status().ToString().c_str());
    _exit(3);
  }
  runtime::GlooOptions options;
  options.kv = kv->get();
  options.scope = "test/" + job_id_;
  options.rank = rank;
  options.size = options_.size;
  options.timeout = options_.comm_timeout;
  auto comm = runtime::CreateGlooCommunicator(options);
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: create: %s\n", rank, comm.status().ToString().c_str());
    _exit(4);
  }
  int code = body(**comm);
  std::fflush(stdout);
  std::fflush(stderr);
  // Skip destructors of a possibly broken communicator only when the body failed; a passing
  // body also proves teardown is clean.
  if (code == 0) comm->reset();
  _exit(code);
}

std::vector<RankOutcome> GlooJob::Run(const Body& body) {
  std::vector<RankOutcome> outcomes(options_.size);
  if (!server_) return outcomes;
  std::fflush(stdout);
  std::fflush(stderr);
  for (int rank = 0; rank < options_.size; ++rank) {
    pid_t pid = fork();
    if (pid == 0) RunChild(rank, body);
    children_.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.deadline;
  int remaining = options_.size;
  while (remaining > 0) {
    bool progressed = false;
    for (int rank = 0; rank < options_.size; ++rank) {
      pid_t pid = children_[rank];
      if (pid <= 0) continue;
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) != pid) continue;
      progressed = true;
      children_[rank] = -1;
      --remaining;
      RankOutcome& out = outcomes[rank];
      out.exited = WIFEXITED(status);
      out.exit_code = out.exited ? WEXITSTATUS(status) : -1;
      out.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      if (!IsVictim(rank) && !(out.exited && out.exit_code == 0)) {
        error_ = "rank " + std::to_string(rank) + " failed; killing the others";
        KillAll(SIGKILL);
        return outcomes;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      error_ = "deadline passed; killing the remaining ranks";
      KillAll(SIGKILL);
      return outcomes;
    }
    // Survivors are done while a stopped victim lingers: it is ours to reap.
    bool only_victims = remaining > 0;
    for (int rank = 0; rank < options_.size; ++rank) {
      if (children_[rank] > 0 && !IsVictim(rank)) only_victims = false;
    }
    if (only_victims) {
      for (int rank = 0; rank < options_.size; ++rank) {
        if (children_[rank] > 0) outcomes[rank].signal = SIGKILL;
      }
      KillAll(SIGKILL);
      return outcomes;
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  children_.clear();
  return outcomes;
}

std::string Describe(const std::vector<RankOutcome>& outcomes) {
  std::string out;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    out += "rank " + std::to_string(i) + ": ";
    out += outcomes[i].exited ? "exit " + std::to_string(outcomes[i].exit_code)
                              : "signal " + std::to_string(outcomes[i].signal);
    out += "; ";
  }
  return out;
}

}  // namespace hvd::test
