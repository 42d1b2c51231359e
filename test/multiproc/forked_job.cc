#include "test/multiproc/forked_job.h"

#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

namespace hvd::test {
namespace {
std::atomic<int> g_job_counter{0};
}

std::string Describe(const std::vector<RankOutcome>& outcomes) {
  std::string out;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    out += "process " + std::to_string(i) + ": ";
    out += outcomes[i].exited ? "exit " + std::to_string(outcomes[i].exit_code)
                              : "signal " + std::to_string(outcomes[i].signal);
    out += "; ";
  }
  return out;
}

ForkedJob::ForkedJob(const std::string& name, Options options) : options_(std::move(options)) {
  for (size_t i = 0; i < key_.size(); ++i) key_[i] = static_cast<uint8_t>(i * 7 + 1);
  job_id_ = name + "-" + std::to_string(getpid()) + "-" + std::to_string(g_job_counter++);
  scope_ = "test/" + job_id_;
}

ForkedJob::~ForkedJob() { KillAll(); }

uint16_t ForkedJob::kv_port() const { return server_ ? server_->port() : 0; }  // during Run

bool ForkedJob::IsVictim(int index) const {
  return std::find(options_.victims.begin(), options_.victims.end(), index) !=
         options_.victims.end();
}

void ForkedJob::KillAll() {
  for (pid_t pid : children_) {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  children_.clear();
}

std::vector<RankOutcome> ForkedJob::Run(int count, const ChildBody& body) {
  std::vector<RankOutcome> outcomes(static_cast<size_t>(count));
  server_.reset();  // no server thread may be running while we fork
  std::fflush(stdout);
  std::fflush(stderr);
  pids_.clear();
  // Fork first, start the server after: a child forked while the server's thread holds a lock
  // (OpenSSL's, the logger's, ...) would deadlock on it in its own handshake. Each child waits
  // for the server's port on a pipe.
  std::vector<int> port_pipes;
  for (int i = 0; i < count; ++i) {
    int fds[2];
    if (pipe(fds) != 0) {
      error_ = "pipe failed";
      KillAll();
      return outcomes;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(options_.child_alarm);
      // The cases' buffers (inputs, expected values, pieces: up to a few MB, new in every case)
      // come from the heap and are reused, not from glibc's fresh mmap for every block over its
      // threshold (128 KiB at first), whose page faults and zeroing were 40 % of
      // shm_multiproc_test's CPU: 126 -> 57 CPU-s, 73 -> 35 s alone (2026-11-29). The
      // allocation tests count calls, which this does not change; sanitizers ignore it.
      mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest before 2.35
      mallopt(M_TRIM_THRESHOLD, 1 << 30);
      close(fds[1]);
      for (int fd : port_pipes) close(fd);
      uint16_t port = 0;
      if (read(fds[0], &port, sizeof(port)) != static_cast<ssize_t>(sizeof(port)) || port == 0) {
        _exit(3);  // the parent could not start the server (it reports why)
      }
      auto kv =
          control::KvClient::Connect("127.0.0.1", port, key_, job_id_, std::chrono::seconds(10));
      if (!kv.ok()) {
        std::fprintf(stderr, "process %d: kv connect: %s\n", i, kv.status().ToString().c_str());
        _exit(3);
      }
      const int code = body(i, **kv);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    close(fds[0]);
    port_pipes.push_back(fds[1]);
    children_.push_back(pid);
    pids_.push_back(pid);
  }
  launcher::RendezvousServerOptions server_options;
  server_options.key = key_;
  server_options.job_id = job_id_;
  auto server = launcher::RendezvousServer::Start(server_options);
  const uint16_t port = server.ok() ? (*server)->port() : 0;
  for (int fd : port_pipes) {
    (void)!write(fd, &port, sizeof(port));
    close(fd);
  }
  if (!server.ok()) {
    error_ = server.status().ToString();
    KillAll();
    return outcomes;
  }
  server_ = std::move(server).value();
  bool has_survivors = false;
  for (int i = 0; i < count; ++i) has_survivors = has_survivors || !IsVictim(i);
  const auto deadline = std::chrono::steady_clock::now() + options_.deadline;
  int remaining = count;
  while (remaining > 0) {
    bool progressed = false;
    for (int i = 0; i < count; ++i) {
      const pid_t pid = children_[i];
      if (pid <= 0) continue;
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) != pid) continue;
      progressed = true;
      children_[i] = -1;
      --remaining;
      RankOutcome& out = outcomes[i];
      out.exited = WIFEXITED(status);
      out.exit_code = out.exited ? WEXITSTATUS(status) : -1;
      out.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      if (!IsVictim(i) && !(out.exited && out.exit_code == 0)) {
        error_ = "process " + std::to_string(i) + " failed; killing the others";
        KillAll();
        return outcomes;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      error_ = "deadline passed; killing the remaining processes";
      KillAll();
      return outcomes;
    }
    // Survivors are done while a stopped victim lingers: it is ours to reap. (A job of
    // victims only has no survivors to wait for: its children run until they end.)
    bool only_victims = remaining > 0 && has_survivors;
    for (int i = 0; i < count; ++i) {
      if (children_[i] > 0 && !IsVictim(i)) only_victims = false;
    }
    if (only_victims) {
      for (int i = 0; i < count; ++i) {
        if (children_[i] > 0) outcomes[i].signal = SIGKILL;
      }
      KillAll();
      return outcomes;
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  children_.clear();
  return outcomes;
}

}  // namespace hvd::test
