#include "test/multiproc/shm_job.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "runtime/shm_communicator.h"

namespace hvd::test {
namespace {
std::atomic<int> g_job_counter{0};
}

ShmJob::ShmJob(Options options) : options_(std::move(options)) {
  for (size_t i = 0; i < key_.size(); ++i) key_[i] = static_cast<uint8_t>(i * 5 + 3);
  job_id_ = "shm-multiproc-" + std::to_string(getpid()) + "-" + std::to_string(g_job_counter++);
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

ShmJob::~ShmJob() { KillAll(); }

bool ShmJob::IsVictim(int rank) const {
  for (int v : options_.victims) {
    if (v == rank) return true;
  }
  return false;
}

void ShmJob::KillAll() {
  for (pid_t pid : children_) {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  children_.clear();
}

std::vector<RankOutcome> ShmJob::Run(const Body& body) {
  const Options& o = options_;
  return RunRaw([&](int rank, control::KvClient& kv, const std::string& scope) {
    runtime::ShmOptions options;
    options.kv = &kv;
    options.scope = scope;
    options.job_id = job_id_;
    options.rank = rank;
    options.size = o.size;
    options.buffer_bytes = o.buffer_bytes;
    options.timeout = o.comm_timeout;
    auto comm = runtime::CreateShmCommunicator(options);
    if (!comm.ok()) {
      std::fprintf(stderr, "rank %d: create: %s\n", rank, comm.status().ToString().c_str());
      return 4;
    }
    const int code = body(**comm);
    if (code == 0) comm->reset();  // a passing body also proves teardown is clean
    return code;
  });
}

std::vector<RankOutcome> ShmJob::RunRaw(const RawBody& body) {
  std::vector<RankOutcome> outcomes(options_.size);
  if (!server_) return outcomes;
  std::fflush(stdout);
  std::fflush(stderr);
  pids_.clear();
  for (int rank = 0; rank < options_.size; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(options_.child_alarm);
      auto kv = control::KvClient::Connect("127.0.0.1", server_->port(), key_, job_id_,
                                           std::chrono::seconds(10));
      if (!kv.ok()) {
        std::fprintf(stderr, "rank %d: kv connect: %s\n", rank, kv.status().ToString().c_str());
        _exit(3);
      }
      const int code = body(rank, **kv, "test/" + job_id_);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    children_.push_back(pid);
    pids_.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.deadline;
  int remaining = options_.size;
  while (remaining > 0) {
    for (int rank = 0; rank < options_.size; ++rank) {
      if (children_[rank] <= 0) continue;
      int status = 0;
      if (waitpid(children_[rank], &status, WNOHANG) != children_[rank]) continue;
      children_[rank] = -1;
      --remaining;
      RankOutcome& out = outcomes[rank];
      out.exited = WIFEXITED(status);
      out.exit_code = out.exited ? WEXITSTATUS(status) : -1;
      out.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      if (!IsVictim(rank) && !(out.exited && out.exit_code == 0)) {
        error_ = "rank " + std::to_string(rank) + " failed; killing the others";
        KillAll();
        return outcomes;
      }
    }
    bool only_victims = remaining > 0;
    for (int rank = 0; rank < options_.size; ++rank) {
      if (children_[rank] > 0 && !IsVictim(rank)) only_victims = false;
    }
    if (only_victims) {  // a stopped victim lingers after the survivors are done
      for (int rank = 0; rank < options_.size; ++rank) {
        if (children_[rank] > 0) outcomes[rank].signal = SIGKILL;
      }
      KillAll();
      return outcomes;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      error_ = "deadline passed; killing the remaining ranks";
      KillAll();
      return outcomes;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  children_.clear();
  return outcomes;
}

std::vector<std::string> LeftoverSegments(const std::vector<pid_t>& pids) {
  std::vector<std::string> found;
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return found;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.rfind("hvd-", 0) != 0) continue;
    for (pid_t pid : pids) {
      const std::string suffix = "-" + std::to_string(pid);
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        found.push_back(name);
      }
    }
  }
  closedir(dir);
  return found;
}

}  // namespace hvd::test
