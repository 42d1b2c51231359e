#include "test/cluster/cluster_env.h"

#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/env_registry.h"

namespace hvd::test {
namespace {

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  std::string word;
  while (in >> word) out.push_back(word);
  return out;
}

}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::optional<ClusterEnv> ClusterEnv::Load() {
  env::Environment process = env::Environment::FromProcess();
  ClusterEnv c;
  c.state_dir = process.Raw("HVD_CLUSTER_STATE").value_or("/run/hvd-cluster");
  c.agent_path = process.Raw("HVD_AGENT_PATH").value_or("");
  std::ifstream in(c.state_dir + "/cluster.env");
  if (!in || c.agent_path.empty()) return std::nullopt;
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string name = line.substr(0, eq), value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
    if (name == "HVD_CLUSTER_HOSTS") c.hosts = Words(value);
    if (name == "HVD_CLUSTER_ADDRS") c.addrs = Words(value);
    if (name == "HVD_CLUSTER_KEY") c.key = value;
    if (name == "HVD_CLUSTER_KNOWN_HOSTS") c.known_hosts = value;
  }
  if (c.hosts.size() < 2) return std::nullopt;
  return c;
}

launcher::SshTarget ClusterEnv::Target(const std::string& host) const {
  launcher::SshTarget t;
  t.host = host;
  t.options.user = "root";
  t.options.home_dir = "/nonexistent";  // never fall back to the real ~/.ssh
  t.options.identity_file = key;
  t.options.known_hosts_file = known_hosts;
  t.options.connect_timeout_s = 5;
  t.options.connect_attempts = 1;
  return t;
}

RankResult CollectRank(launcher::SpawnedRank& rank, std::chrono::seconds limit) {
  RankResult r;
  auto deadline = std::chrono::steady_clock::now() + limit;
  int* fds[2] = {&rank.stdout_fd, &rank.stderr_fd};
  std::string* sinks[2] = {&r.out, &r.err};
  while ((*fds[0] >= 0 || *fds[1] >= 0) && std::chrono::steady_clock::now() < deadline) {
    pollfd p[2] = {{*fds[0], POLLIN, 0}, {*fds[1], POLLIN, 0}};
    if (::poll(p, 2, 100) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (*fds[i] < 0 || p[i].revents == 0) continue;
      char buffer[4096];
      ssize_t n = ::read(*fds[i], buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0) {
        ::close(*fds[i]);
        *fds[i] = -1;
      }
    }
  }
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd e{rank.handle->exit_event_fd(), POLLIN, 0};
    if (::poll(&e, 1, 100) == 1) break;
  }
  r.wait_status = rank.handle->TryWait().value_or(-1);
  r.transport_error = rank.handle->TransportError();
  return r;
}

std::string ReadLine(int fd, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  std::string line;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char c;
    ssize_t n = ::read(fd, &c, 1);
    if (n == 0 || (n == 1 && c == '\n')) break;
    if (n == 1) line += c;
  }
  return line;
}

std::vector<int> PidsWithCmdline(const std::string& needle) {
  std::vector<int> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* entry = ::readdir(proc)) {
    int pid = atoi(entry->d_name);
    if (pid <= 0 || pid == ::getpid()) continue;
    std::string cmdline = ReadFile("/proc/" + std::string(entry->d_name) + "/cmdline");
    if (cmdline.find(needle) != std::string::npos) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

std::vector<int> NetnsPids(const std::string& ns) {
  std::vector<int> out;
  std::string command = "ip netns pids " + ns + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  int pid;
  while (fscanf(pipe, "%d", &pid) == 1) out.push_back(pid);
  ::pclose(pipe);
  return out;
}

}  // namespace hvd::test
