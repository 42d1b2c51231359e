// The launcher pieces multi-host jobs add, without SSH: remote worker environment, network
// choice, and job control of a rank that has a RankHandle instead of a pid.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>

#include "launcher/job_controller.h"
#include "launcher/outcome/exit_codes.h"
#include "launcher/outcome/failure_summary.h"
#include "launcher/rendezvous/network_interface.h"
#include "launcher/worker/worker_env.h"

namespace hvd::launcher {
namespace {

using ::testing::HasSubstr;

TEST(RemoteWorkerEnvTest, ForwardsTheEnvironmentAsHorovodDoesButNotThisMachinesOrTheSecretFd) {
  discovery::RankInfo rank;
  rank.rank = 1;
  rank.host = "h2";
  JobEnvContext job;
  job.size = 2;
  job.rendezvous_addr = "10.0.0.1";
  job.secret_fd = "5";
  EnvMap launcher = {{"HOME", "/root"},          {"PATH", "/bin"},
                     {"HVD_TIMELINE", "t.json"}, {"HOROVOD_LOG_LEVEL", "x"},
                     {"NCCL_DEBUG", "INFO"},     {"PYTHONPATH", "/p"},
                     {"OMP_NUM_THREADS", "4"},   {"MY_DATA_DIR", "/data"},
                     {"SSH_AUTH_SOCK", "/s"},    {"HOSTNAME", "h1"},
                     {"PWD", "/here"},           {"SLURM_PROCID", "0"},
                     {"SLURMD_NODENAME", "h1"},  {"BASH_FUNC_f%%", "() { :; }"},
                     {"HVD_SECRET_FD", "9"}};
  EnvMap env = BuildRemoteWorkerEnv(launcher, {{"HVD_CYCLE_TIME", "2"}}, rank, job);
  // what the user set up here, as horovodrun exports it
  EXPECT_EQ(env["PATH"], "/bin");
  EXPECT_EQ(env["OMP_NUM_THREADS"], "4");
  EXPECT_EQ(env["MY_DATA_DIR"], "/data");
  // not what names this machine or session
  for (const char* name : {"HOME", "SSH_AUTH_SOCK", "HOSTNAME", "PWD", "SLURM_PROCID",
                           "SLURMD_NODENAME", "BASH_FUNC_f%%", "HVD_SECRET_FD"}) {
    EXPECT_EQ(env.count(name), 0u) << name;
  }
  EXPECT_EQ(env["HVD_TIMELINE"], "t.json");
  EXPECT_EQ(env["HOROVOD_LOG_LEVEL"], "x");
  EXPECT_EQ(env["NCCL_DEBUG"], "INFO");
  EXPECT_EQ(env["PYTHONPATH"], "/p");
  EXPECT_EQ(env["HVD_CYCLE_TIME"], "2");
  EXPECT_EQ(env["HVD_RANK"], "1");
  EXPECT_EQ(env["HVD_RENDEZVOUS_ADDR"], "10.0.0.1");
  EXPECT_EQ(env.count("HVD_GLOO_IFACE"), 0u);
}

TEST(RemoteWorkerEnvTest, InterfacesWhenChosen) {
  discovery::RankInfo rank;
  JobEnvContext job;
  job.gloo_iface = "eth0";
  job.nccl_socket_ifname = "eth0,eth1";
  EnvMap env = BuildWorkerEnv({}, {}, rank, job);
  EXPECT_EQ(env["HVD_GLOO_IFACE"], "eth0");
  EXPECT_EQ(env["HOROVOD_GLOO_IFACE"], "eth0");
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "eth0,eth1");
  EXPECT_EQ(env["GLOO_SOCKET_IFNAME"], "eth0");  // torch.distributed's Gloo
  // A GLOO_SOCKET_IFNAME of the user's wins; none without a chosen interface
  EXPECT_EQ(BuildWorkerEnv({{"GLOO_SOCKET_IFNAME", "ib0"}}, {}, rank, job)["GLOO_SOCKET_IFNAME"],
            "ib0");
  EXPECT_EQ(BuildWorkerEnv({}, {}, rank, JobEnvContext{}).count("GLOO_SOCKET_IFNAME"), 0u);
}

TEST(NetworkInterfaceTest, NamedInterfaceAndErrors) {
  Result<NetworkChoice> lo = ChooseNetwork({}, {"lo"});
  ASSERT_TRUE(lo.ok()) << lo.status().ToString();
  EXPECT_EQ(lo->interface.address, "127.0.0.1");
  Result<NetworkChoice> bad = ChooseNetwork({}, {"hvd-no-such-nic"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("hvd-no-such-nic"));
  EXPECT_THAT(bad.status().message(), HasSubstr("lo"));
  EXPECT_FALSE(ChooseNetwork({"hvd-unresolvable.invalid"}, {}).ok());
  Result<InterfaceAddress> toward = InterfaceToward("127.0.0.1");
  ASSERT_TRUE(toward.ok());
  EXPECT_EQ(toward->name, "lo");
}

// What a FakeHandle was asked to do; outlives the handle (job control owns handles).
struct HandleLog {
  std::vector<int> signals;
  bool closed = false;
};

// A rank that ends when told to: Signal(SIGTERM) makes it "exit" with that signal.
class FakeHandle : public RankHandle {
 public:
  explicit FakeHandle(std::shared_ptr<HandleLog> log)
      : log_(std::move(log)), fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~FakeHandle() override { close(fd_); }
  int exit_event_fd() const override { return fd_; }
  std::optional<int> TryWait() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return status_;
  }
  void Signal(int signo) override {
    log_->signals.push_back(signo);
    Finish(signo);  // killed by signo
  }
  void Close() override { log_->closed = true; }
  std::string TransportError() const override { return transport_; }
  void Finish(int wait_status, std::string transport = "") {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_) return;
    status_ = wait_status;
    transport_ = std::move(transport);
    uint64_t one = 1;
    (void)!write(fd_, &one, sizeof(one));
  }

 private:
  std::shared_ptr<HandleLog> log_;
  int fd_;
  std::mutex mutex_;
  std::optional<int> status_;
  std::string transport_;
};

// Hands out FakeHandles; rank 1's ends at once with `first_status`.
class FakeRemoteSpawner : public RankSpawner {
 public:
  explicit FakeRemoteSpawner(int first_status, std::string transport = "")
      : first_status_(first_status), transport_(std::move(transport)) {}
  Result<SpawnedRank> Spawn(const SpawnRequest& request) override {
    SpawnedRank spawned;
    int out[2], err[2];
    EXPECT_EQ(pipe2(out, O_CLOEXEC | O_NONBLOCK), 0);
    EXPECT_EQ(pipe2(err, O_CLOEXEC | O_NONBLOCK), 0);
    (void)!write(out[1], "hi\n", 3);
    close(out[1]);
    close(err[1]);
    spawned.stdout_fd = out[0];
    spawned.stderr_fd = err[0];
    handles.push_back(std::make_shared<HandleLog>());
    auto handle = std::make_unique<FakeHandle>(handles.back());
    if (request.rank == 1) handle->Finish(first_status_, transport_);
    spawned.handle = std::move(handle);
    return spawned;
  }
  std::vector<std::shared_ptr<HandleLog>> handles;

 private:
  int first_status_;
  std::string transport_;
};

JobOutcome RunFake(FakeRemoteSpawner& spawner, int out_fd) {
  OutputForwarder::Options options;
  options.size = 2;
  options.stdout_fd = out_fd;
  options.stderr_fd = out_fd;
  OutputForwarder output(options);
  Result<SignalChannel> signals = SignalChannel::Open();
  HVD_CHECK(signals.ok());
  std::vector<SpawnRequest> requests(2);
  for (int i = 0; i < 2; ++i) {
    requests[i].rank = i;
    requests[i].host = "h" + std::to_string(i);
    requests[i].argv = {"x"};
    requests[i].remote = true;
  }
  JobController controller({30, 5, false}, spawner, output, *signals);
  return controller.Run(requests);
}

TEST(RemoteJobControlTest, RemoteFailureEndsTheJobThroughTheHandles) {
  int out = memfd_create("out", MFD_CLOEXEC);
  FakeRemoteSpawner spawner(W_EXITCODE(3, 0));
  JobOutcome outcome = RunFake(spawner, out);
  close(out);
  EXPECT_EQ(ExitCodeOf(outcome), 3);
  EXPECT_EQ(outcome.first_failed_rank, 1);
  ASSERT_EQ(spawner.handles.size(), 2u);
  EXPECT_EQ(spawner.handles[0]->signals, std::vector<int>{SIGTERM});
  EXPECT_TRUE(outcome.ranks[0].stopped_by_hvdrun);
  EXPECT_TRUE(spawner.handles[0]->closed);
  EXPECT_TRUE(spawner.handles[1]->closed);
}

TEST(RemoteJobControlTest, LostConnectionIsNamedInTheSummary) {
  int out = memfd_create("out", MFD_CLOEXEC);
  FakeRemoteSpawner spawner(W_EXITCODE(255, 0), "connection to root@h1:22 lost");
  JobOutcome outcome = RunFake(spawner, out);
  close(out);
  EXPECT_EQ(ExitCodeOf(outcome), 255);
  std::string summary =
      FormatFailureSummary(outcome, [](int) { return std::vector<std::string>{}; });
  EXPECT_THAT(summary, HasSubstr("rank 1 on h1 failed first: connection to root@h1:22 lost"));
}

}  // namespace
}  // namespace hvd::launcher
