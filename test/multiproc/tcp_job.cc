#include "test/multiproc/tcp_job.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "runtime/tcp_communicator.h"

namespace hvd::test {
namespace {
std::atomic<int> g_job_counter{0};
}

TcpJob::TcpJob(Options options) : options_(std::move(options)) {
  for (size_t i = 0; i < key_.size(); ++i) key_[i] = static_cast<uint8_t>(i * 11 + 3);
  job_id_ = "tcp-multiproc-" + std::to_string(getpid()) + "-" + std::to_string(g_job_counter++);
  scope_ = "test/" + job_id_;
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

TcpJob::~TcpJob() { KillAll(SIGKILL); }

uint16_t TcpJob::kv_port() const { return server_ ? server_->port() : 0; }

bool TcpJob::Expendable(size_t index) const {
  for (int v : options_.victims) {
    if (static_cast<size_t>(v) == index) return true;
  }
  return false;
}

void TcpJob::KillAll(int signal) {
  for (pid_t pid : children_) {
    if (pid > 0) {
      kill(pid, signal);
      if (signal == SIGKILL) waitpid(pid, nullptr, 0);
    }
  }
  if (signal == SIGKILL) children_.clear();
}

std::unique_ptr<control::KvClient> TcpJob::ConnectKv(int who) const {
  auto kv = control::KvClient::Connect("127.0.0.1", server_->port(), key_, job_id_,
                                       std::chrono::seconds(10));
  if (!kv.ok()) {
    std::fprintf(stderr, "process %d: kv connect: %s\n", who, kv.status().ToString().c_str());
    _exit(3);
  }
  return std::move(kv).value();
}

void TcpJob::RunRank(int rank, const Body& body) {
  alarm(options_.child_alarm);
  auto kv = ConnectKv(rank);
  if (options_.before_create) {
    if (int code = options_.before_create(rank, *kv); code != 0) _exit(code);
  }
  runtime::TcpOptions options;
  options.kv = kv.get();
  options.scope = scope_;
  options.rank = rank;
  options.size = options_.size;
  options.route_to = "127.0.0.1";
  options.hostname = "host" + std::to_string(rank);
  options.key = key_;
  options.job_id = job_id_;
  options.timeout = options_.comm_timeout;
  auto comm = runtime::CreateTcpCommunicator(options);
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: create: %s\n", rank, comm.status().ToString().c_str());
    _exit(4);
  }
  int code = body(**comm);
  std::fflush(stdout);
  std::fflush(stderr);
  // A passing body also proves teardown is clean.
  if (code == 0) comm->reset();
  _exit(code);
}

std::vector<TcpOutcome> TcpJob::Run(const Body& body, const Extra& extra) {
  const size_t total = static_cast<size_t>(options_.size) + (extra ? 1 : 0);
  std::vector<TcpOutcome> outcomes(total);
  if (!server_) return outcomes;
  std::fflush(stdout);
  std::fflush(stderr);
  for (size_t i = 0; i < total; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      if (i < static_cast<size_t>(options_.size)) RunRank(static_cast<int>(i), body);
      alarm(options_.child_alarm);
      auto kv = ConnectKv(static_cast<int>(i));
      int code = extra(*kv);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    children_.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.deadline;
  size_t remaining = total;
  while (remaining > 0) {
    bool progressed = false;
    for (size_t i = 0; i < total; ++i) {
      pid_t pid = children_[i];
      if (pid <= 0) continue;
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) != pid) continue;
      progressed = true;
      children_[i] = -1;
      --remaining;
      TcpOutcome& out = outcomes[i];
      out.exited = WIFEXITED(status);
      out.exit_code = out.exited ? WEXITSTATUS(status) : -1;
      out.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      if (!Expendable(i) && !(out.exited && out.exit_code == 0)) {
        error_ = "process " + std::to_string(i) + " failed; killing the others";
        KillAll(SIGKILL);
        return outcomes;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      error_ = "deadline passed; killing the remaining processes";
      KillAll(SIGKILL);
      return outcomes;
    }
    // Survivors are done while a stopped victim lingers: it is ours to reap.
    bool only_victims = remaining > 0;
    for (size_t i = 0; i < total; ++i) {
      if (children_[i] > 0 && !Expendable(i)) only_victims = false;
    }
    if (only_victims) {
      for (size_t i = 0; i < total; ++i) {
        if (children_[i] > 0) outcomes[i].signal = SIGKILL;
      }
      KillAll(SIGKILL);
      return outcomes;
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  children_.clear();
  return outcomes;
}

std::string Describe(const std::vector<TcpOutcome>& outcomes) {
  std::string out;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    out += "process " + std::to_string(i) + ": ";
    out += outcomes[i].exited ? "exit " + std::to_string(outcomes[i].exit_code)
                              : "signal " + std::to_string(outcomes[i].signal);
    out += "; ";
  }
  return out;
}

}  // namespace hvd::test
