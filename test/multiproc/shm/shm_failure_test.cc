// Failure behaviour of the shared-memory communicator with real processes: a member SIGKILLed
// or SIGSTOPped mid-loop, Abort() from another thread, and /dev/shm left clean. Survivors must
// get a non-OK Status within the communicator timeout and exit normally.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/shm_names.h"
#include "runtime/transports/shm/shm_communicator.h"
#include "runtime/transports/shm/shm_segment.h"
#include "test/multiproc/failure_check.h"
#include "test/multiproc/shm/shm_job.h"

namespace hvd::test {
namespace {

using runtime::Communicator;
using runtime::DataType;
using runtime::ReduceOp;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Every member runs allreduces of `count` floats; `victim` sends itself `signal` at iteration
// 20. Survivors must fail with `want` naming a rank within `within` seconds, then fail fast
// again on the next call. A SIGKILLed victim at 2 members is the lost member the survivor reports
// (hvdrun's "failed first"), whether the survivor was waiting on it or reading its tensors
// (single copy: process_vm_readv fails with ESRCH; until 2026-12-01 that read named nobody).
ShmJob::Body LoopUntilFailure(int victim, int signal, size_t count, StatusCode want,
                              double within) {
  return [=](Communicator& comm) -> int {
    std::vector<float> buf(count, 1.0f);
    Status status;
    Clock::time_point last_ok = Clock::now();
    for (int i = 0; i < 1000000 && status.ok(); ++i) {
      if (i == 20 && comm.rank() == victim) raise(signal);
      status = comm.Allreduce(buf.data(), static_cast<int64_t>(count), DataType::kFloat32,
                              ReduceOp::kSum);
      if (status.ok()) last_ok = Clock::now();
    }
    if (signal == SIGKILL && comm.size() == 2 && comm.lost_member() != victim) {
      std::fprintf(stderr, "rank %d: lost member %d after %s\n", comm.rank(), comm.lost_member(),
                   status.ToString().c_str());
      return 2;
    }
    return CheckSurvivorFailure(comm, status, last_ok, {want}, within, "rank ", 0.1);
  };
}

TEST(ShmFailure, CheckPeersNamesAMemberThatExitedNotABusyOne) {
  // Given 3 members: member 2 exits after two barriers, member 1 is busy for 300 ms
  ShmJob::Options options;
  options.size = 3;
  options.comm_timeout = std::chrono::milliseconds(10000);
  options.victims = {2};
  ShmJob job(options);
  auto outcomes = job.Run([](Communicator& comm) -> int {
    if (!comm.Barrier().ok()) return 5;
    // While every member is alive, nothing is known
    const Status alive = comm.CheckPeers();
    if (!alive.ok() || comm.lost_member() != -1) {
      std::fprintf(stderr, "rank %d: %s\n", comm.rank(), alive.ToString().c_str());
      return 6;
    }
    if (!comm.Barrier().ok()) return 7;
    if (comm.rank() == 2) _exit(0);
    if (comm.rank() == 1) {
      // Busy (reads nothing) while rank 0 checks; then it leaves once it sees a peer gone.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const auto start = Clock::now();
      while (comm.CheckPeers().ok() && Seconds(Clock::now() - start) < 5.0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      return 0;
    }
    // Then rank 0 learns, without a collective, that rank 2 is gone; busy rank 1 is not named
    const auto start = Clock::now();
    Status st;
    while ((st = comm.CheckPeers()).ok() && Seconds(Clock::now() - start) < 5.0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::fprintf(stderr, "rank 0 after %.3f s: %s\n", Seconds(Clock::now() - start),
                 st.ToString().c_str());
    if (st.code() != StatusCode::kRemoteError) return 1;
    if (comm.lost_member() != 2) return 3;  // what hvdrun is told (Runtime::ReportLostMember)
    return st.message().find("shared-memory rank 2 (pid ") != std::string::npos ? 0 : 2;
  });
  ASSERT_TRUE(job.error().empty()) << job.error() << " " << Describe(outcomes);
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(outcomes[r].exited && outcomes[r].exit_code == 0) << Describe(outcomes);
  }
}

void ExpectSurvivorsOk(const std::vector<RankOutcome>& outcomes, int victim) {
  for (int r = 0; r < static_cast<int>(outcomes.size()); ++r) {
    if (r == victim) continue;
    EXPECT_TRUE(outcomes[r].exited && outcomes[r].exit_code == 0) << Describe(outcomes);
  }
}

class ShmKillTest : public ::testing::TestWithParam<std::tuple<int, size_t>> {
 protected:
  // The last member SIGKILLs itself mid-loop; ShmOptions::single_copy_bytes is as given.
  void RunKill(int64_t single_copy_bytes) {
    const int size = std::get<0>(GetParam());
    const int victim = size - 1;
    ShmJob::Options options;
    options.size = size;
    options.comm_timeout = std::chrono::milliseconds(20000);
    options.buffer_bytes = size_t{256} << 10;
    options.single_copy_bytes = single_copy_bytes;
    options.victims = {victim};
    ShmJob job(options);
    auto outcomes = job.Run(
        LoopUntilFailure(victim, SIGKILL, std::get<1>(GetParam()), StatusCode::kRemoteError, 1.5));
    EXPECT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
    EXPECT_EQ(outcomes[victim].signal, SIGKILL) << Describe(outcomes);
    ExpectSurvivorsOk(outcomes, victim);
    EXPECT_TRUE(LeftoverSegments(job.job_id()).empty());
  }
};

// Given a group mid-way through a loop of allreduces (small: one round; large: chunked), when
// one member is SIGKILLed, then every survivor gets kRemoteError naming a rank within ~1 s
// (liveness is checked every 50 ms) -- far below the 20 s timeout -- and /dev/shm is clean.
TEST_P(ShmKillTest, SigkillOfOneMemberIsRemoteErrorOnTheOthers) { RunKill(0); }

// The same through the single-copy allreduce (every size reads the peers' buffers directly):
// a read from a dead member's process fails, and so do the waits on it.
TEST_P(ShmKillTest, SigkillDuringSingleCopyAllreducesIsRemoteErrorOnTheOthers) { RunKill(1); }

INSTANTIATE_TEST_SUITE_P(Sizes, ShmKillTest,
                         ::testing::Combine(::testing::Values(2, 4),
                                            ::testing::Values(size_t{1000}, size_t{1} << 20)));

// A single-copy reader stalled until its peer gave up on it and reused its tensors.
enum class SingleCopyOp { kAllreduce, kAlltoall };

class ShmStaleReadTest : public ::testing::TestWithParam<SingleCopyOp> {};

// Given 2 members in a single-copy collective (1 MiB), where member 1 stalls right before it
// reads member 0's tensors until member 0 has timed out waiting for it (3 s: long enough that
// the first, ordinary op never times out on a loaded machine), returned, and overwritten those
// tensors, then member 1 fails naming rank 0 (kRemoteError, lost_member 0) instead of returning
// OK with the overwritten bytes: member 0 had ended the round before it gave up, so member 1's
// waits on it passed. Until 2026-12-01 it returned OK.
TEST_P(ShmStaleReadTest, AReaderThatOutlivedItsPeersWaitFailsNamingIt) {
  const bool allreduce = GetParam() == SingleCopyOp::kAllreduce;
  ShmJob::Options options;
  options.size = 2;
  options.comm_timeout = std::chrono::milliseconds(3000);
  options.single_copy_bytes = 1;  // every size reads the peers' tensors directly
  ShmJob job(options);
  auto outcomes = job.RunRaw([&](int rank, control::KvClient& kv, const std::string& scope) {
    runtime::ShmOptions group = job.GroupOptions(rank, kv, scope);
    bool armed = false;
    if (rank == 1) {
      group.before_peer_reads = [&] {
        if (!armed) return;
        armed = false;
        if (!kv.Wait(scope + "/overwritten", std::chrono::seconds(30)).ok()) _exit(8);
      };
    }
    auto comm = runtime::CreateShmCommunicator(group);
    if (!comm.ok()) return 4;
    constexpr int64_t kCount = int64_t{1} << 18;  // floats: 1 MiB
    std::vector<float> in(kCount, static_cast<float>(rank + 1)), out(kCount, 0.0f);
    auto run = [&] {
      if (allreduce) {
        return (*comm)->Allreduce(in.data(), kCount, DataType::kFloat32, ReduceOp::kSum);
      }
      const std::vector<int64_t> bytes(2, kCount * 2);  // half of the floats to each member
      return (*comm)->Alltoallv(reinterpret_cast<const char*>(in.data()), bytes,
                                reinterpret_cast<char*>(out.data()), bytes);
    };
    // One op as usual first: single copy works here, and the values are right.
    Status s = run();
    const float want = allreduce ? 3.0f : 1.0f;  // out[0]: from member 0
    if (!s.ok() || (allreduce ? in : out)[0] != want) {
      std::fprintf(stderr, "rank %d: first op: %s\n", rank, s.ToString().c_str());
      return 5;
    }
    std::fill(in.begin(), in.end(), static_cast<float>(rank + 1));
    armed = true;
    s = run();
    std::fprintf(stderr, "rank %d: %s\n", rank, s.ToString().c_str());
    if (rank == 0) {
      if (s.code() != StatusCode::kTimeout) return 6;
      // What a caller may do once its op has failed: reuse the tensor.
      std::fill(in.begin(), in.end(), -1000.0f);
      if (!kv.Set(scope + "/overwritten", "1").ok()) return 7;
      // Alive until member 1 is done reading, so its reads do not fail on a process gone.
      return kv.Wait(scope + "/read", std::chrono::seconds(30)).ok() ? 0 : 9;
    }
    (void)kv.Set(scope + "/read", "1");
    const std::vector<float>& got = allreduce ? in : out;
    const bool stale = std::find(got.begin(), got.end(), -1000.0f) != got.end() ||
                       std::find(got.begin(), got.end(), -998.0f) != got.end();
    if (s.ok()) return stale ? 10 : 11;  // 10: the bug, stale bytes returned as a result
    if (s.code() != StatusCode::kRemoteError || (*comm)->lost_member() != 0 ||
        s.message().find("rank 0 failed in a collective while this rank read") ==
            std::string::npos) {
      return 12;
    }
    return 0;
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
  for (const auto& out : outcomes)
    EXPECT_TRUE(out.exited && out.exit_code == 0) << Describe(outcomes);
  EXPECT_TRUE(LeftoverSegments(job.job_id()).empty());
}

INSTANTIATE_TEST_SUITE_P(Ops, ShmStaleReadTest,
                         ::testing::Values(SingleCopyOp::kAllreduce, SingleCopyOp::kAlltoall));

// Given 2 members in a single-copy alltoall, where member 1, right before it reads member 0's
// input, SIGKILLs member 0 and waits until it is dead, then member 1's read fails (ESRCH) naming
// rank 0 as exited, and rank 0 is its lost member (what hvdrun reports as failed first; until
// 2026-12-01 a read that failed this way named nobody).
TEST(ShmFailure, AMemberKilledBeforeItsTensorsAreReadIsTheLostMember) {
  ShmJob::Options options;
  options.size = 2;
  options.single_copy_bytes = 1;
  options.victims = {0};
  ShmJob job(options);
  auto outcomes = job.RunRaw([&](int rank, control::KvClient& kv, const std::string& scope) {
    runtime::ShmOptions group = job.GroupOptions(rank, kv, scope);
    if (rank == 0 && !kv.Set(scope + "/pid0", std::to_string(getpid())).ok()) return 3;
    if (rank == 1) {
      group.before_peer_reads = [&] {
        auto pid = kv.Wait(scope + "/pid0", std::chrono::seconds(30));
        if (!pid.ok()) _exit(8);
        const pid_t victim = static_cast<pid_t>(std::stol(*pid));
        kill(victim, SIGKILL);
        // Dead: a zombie (its parent, the test, reaps it later) or gone.
        const auto until = Clock::now() + std::chrono::seconds(10);
        while (Clock::now() < until) {
          std::ifstream stat("/proc/" + std::to_string(victim) + "/stat");
          std::string pid_field, comm_field, state;
          if (!(stat >> pid_field >> comm_field >> state) || state == "Z") return;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        _exit(9);
      };
    }
    auto comm = runtime::CreateShmCommunicator(group);
    if (!comm.ok()) return 4;
    std::vector<char> in(2 << 20, 'a'), out(2 << 20);
    const std::vector<int64_t> bytes(2, 1 << 20);
    const Status s = (*comm)->Alltoallv(in.data(), bytes, out.data(), bytes);
    std::fprintf(stderr, "rank %d: %s; lost member %d\n", rank, s.ToString().c_str(),
                 (*comm)->lost_member());
    if (s.code() != StatusCode::kRemoteError ||
        s.message().find("bytes of rank 0's buffers") == std::string::npos ||
        s.message().find("(it exited)") == std::string::npos) {
      return 5;
    }
    return (*comm)->lost_member() == 0 ? 0 : 6;
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
  EXPECT_EQ(outcomes[0].signal, SIGKILL) << Describe(outcomes);
  EXPECT_TRUE(outcomes[1].exited && outcomes[1].exit_code == 0) << Describe(outcomes);
  EXPECT_TRUE(LeftoverSegments(job.job_id()).empty());
}

// Given a group looping over negotiation rounds that post inputs (the eager path: each member
// posts 4 KiB with its words, reads every member's through posted_inputs() and leaves the
// round held until its next call), when the last member SIGKILLs itself while holding a round
// it posted, then every survivor gets kRemoteError naming a rank within ~1 s and fails fast
// after, as with the ordinary rounds; what the dead member had posted was still read intact.
TEST(ShmFailure, SigkillWhileHoldingAPostedRoundIsRemoteErrorOnTheOthers) {
  ShmJob::Options options;
  options.size = 3;
  options.comm_timeout = std::chrono::milliseconds(20000);
  options.victims = {2};
  ShmJob job(options);
  auto outcomes = job.Run([](Communicator& comm) -> int {
    const int n = comm.size(), me = comm.rank();
    std::vector<int64_t> bytes(n, 4096);
    std::vector<char> mine(4096, static_cast<char>('a' + me)), all(4096 * n);
    Status status;
    Clock::time_point last_ok = Clock::now();
    for (int i = 0; i < 1000000 && status.ok(); ++i) {
      std::vector<uint64_t> words = {~uint64_t{0}};
      status = comm.BitwiseAndPostingInput(words, mine.data(), bytes);
      if (status.ok()) status = comm.posted_inputs()->Allgatherv(nullptr, all.data(), bytes);
      if (!status.ok()) break;
      for (int k = 0; k < n; ++k) {
        if (all[4096 * k] != 'a' + k || all[4096 * k + 4095] != 'a' + k) {
          std::fprintf(stderr, "rank %d: member %d's posted input read wrong\n", me, k);
          return 1;
        }
      }
      last_ok = Clock::now();
      if (i == 20 && me == n - 1) raise(SIGKILL);  // holding the round it just posted
    }
    return CheckSurvivorFailure(comm, status, last_ok, {StatusCode::kRemoteError}, 1.5, "rank 2",
                                0.1);
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
  EXPECT_EQ(outcomes[2].signal, SIGKILL) << Describe(outcomes);
  ExpectSurvivorsOk(outcomes, 2);
  EXPECT_TRUE(LeftoverSegments(job.job_id()).empty());
}

// Given a member that stops (SIGSTOP) and never returns, the others time out (kTimeout) after
// the 1 s communicator timeout, not later.
TEST(ShmFailure, StoppedMemberIsTimeout) {
  ShmJob::Options options;
  options.size = 3;
  options.comm_timeout = std::chrono::milliseconds(1000);
  options.victims = {1};
  ShmJob job(options);
  auto outcomes = job.Run(LoopUntilFailure(1, SIGSTOP, 1000, StatusCode::kTimeout, 2.5));
  EXPECT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
  ExpectSurvivorsOk(outcomes, 1);
}

// Given rank 0 blocked in an allreduce its peer has not joined yet, when another thread calls
// Abort(), then the call returns kAborted promptly, and the peer, arriving later, gets
// kRemoteError ("aborted its communicator") at once instead of waiting for its timeout.
TEST(ShmFailure, AbortFromAnotherThreadFailsBothSides) {
  ShmJob::Options options;
  options.size = 2;
  options.comm_timeout = std::chrono::milliseconds(20000);
  ShmJob job(options);
  auto outcomes = job.Run([](Communicator& comm) -> int {
    Status s;
    Clock::time_point start = Clock::now();
    if (comm.rank() == 0) {
      std::thread aborter([&comm] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        comm.Abort();
      });
      std::vector<float> buf(100, 1.0f);
      s = comm.Allreduce(buf.data(), 100, DataType::kFloat32, ReduceOp::kSum);
      aborter.join();
      if (s.code() != StatusCode::kAborted) return 1;
      if (comm.Barrier().code() != StatusCode::kAborted) return 2;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
      start = Clock::now();
      // Rank 0 posted its first round before it was aborted, so the failure shows up at the
      // latest in the second call.
      for (int i = 0; i < 2 && s.ok(); ++i) s = comm.Barrier();
      if (s.code() != StatusCode::kRemoteError) return 1;
    }
    const double took = Seconds(Clock::now() - start);
    std::fprintf(stderr, "rank %d: %.3f s: %s\n", comm.rank(), took, s.ToString().c_str());
    return took < (comm.rank() == 0 ? 1.0 : 0.3) ? 0 : 3;
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
}

// Given a job whose members are all SIGKILLed right after the communicator exists, /dev/shm
// holds no segment of theirs (the name is unlinked before CreateShmCommunicator returns).
TEST(ShmFailure, KilledJobLeavesNothingInDevShm) {
  ShmJob::Options options;
  options.size = 3;
  options.victims = {0, 1, 2};
  ShmJob job(options);
  auto outcomes = job.Run([](Communicator& comm) -> int {
    (void)comm.Barrier();
    raise(SIGKILL);
    return 1;
  });
  for (const auto& out : outcomes) EXPECT_EQ(out.signal, SIGKILL) << Describe(outcomes);
  EXPECT_TRUE(LeftoverSegments(job.job_id()).empty());
}

// Given staging too large for /dev/shm, when the group is created, then member 0 fails with
// kIoError pointing at /dev/shm and HVD_SHM_BUFFER_BYTES, and the others learn it at once
// (kRemoteError) instead of waiting out their 20 s timeout.
TEST(ShmFailure, SegmentTooLargeForDevShmFailsEveryMemberFast) {
  ShmJob::Options options;
  options.size = 3;
  ShmJob job(options);
  auto outcomes = job.RunRaw([&](int rank, control::KvClient& kv, const std::string& scope) {
    runtime::ShmOptions o = job.GroupOptions(rank, kv, scope);
    o.buffer_bytes = size_t{1} << 42;  // 4 TiB per member
    o.timeout = std::chrono::milliseconds(20000);
    const Clock::time_point start = Clock::now();
    auto comm = runtime::CreateShmCommunicator(o);
    const double took = Seconds(Clock::now() - start);
    const StatusCode want = rank == 0 ? StatusCode::kIoError : StatusCode::kRemoteError;
    std::fprintf(stderr, "rank %d: %.3f s: %s\n", rank, took, comm.status().ToString().c_str());
    if (comm.ok() || comm.status().code() != want || took > 5.0 ||
        comm.status().message().find("/dev/shm") == std::string::npos) {
      return 1;
    }
    return 0;
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
  EXPECT_TRUE(LeftoverSegments(job.job_id()).empty());
}

// The mappings of /dev/shm files in this process (/proc/self/maps): an anonymous segment shows
// as "/dev/shm/#<inode> (deleted)", a named one as "/dev/shm/hvd-... (deleted)".
std::vector<std::string> ShmMappings() {
  std::vector<std::string> found;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const size_t at = line.find("/dev/shm/");
    if (at != std::string::npos) found.push_back(line.substr(at));
  }
  return found;
}

bool MapsOnly(const std::string& prefix) {
  const auto maps = ShmMappings();
  for (const auto& m : maps) {
    if (m.rfind(prefix, 0) != 0) {
      std::fprintf(stderr, "mapped %s, expected only %s...\n", m.c_str(), prefix.c_str());
      return false;
    }
  }
  if (maps.empty()) std::fprintf(stderr, "no /dev/shm mapping\n");
  return !maps.empty();
}

// Given a group being created, when member 0 is SIGKILLed while it waits for the others to map
// the segment, then /dev/shm holds nothing of the job (the segment never had a name; before
// 2026-11-24 it had one until every member had mapped it, and a member 0 killed in between left
// it behind), and a member that did map it sees an anonymous file.
TEST(ShmFailure, Member0KilledWhileGatheringLeavesNothingInDevShm) {
  ShmJob::Options options;
  options.size = 2;
  options.victims = {0};
  ShmJob job(options);
  const std::string prefix = control::ShmSegmentPrefix(job.job_id());
  auto outcomes = job.RunRaw([&](int rank, control::KvClient& kv, const std::string& scope) {
    if (rank == 0) {
      if (!kv.Set(scope + "/test/pid", std::to_string(getpid())).ok()) return 2;
      runtime::ShmOptions o = job.GroupOptions(rank, kv, scope);
      o.timeout = std::chrono::milliseconds(20000);
      auto comm = runtime::CreateShmCommunicator(o);  // waits for member 1, which never comes
      return 1;
    }
    auto pid = kv.Wait(scope + "/test/pid", std::chrono::milliseconds(20000));
    // Published: member 0 has made the segment and waits for the others.
    auto published = kv.Wait(scope + "/shm/name", std::chrono::milliseconds(20000));
    if (!pid.ok() || !published.ok()) return 2;
    const auto named = LeftoverSegments(job.job_id());
    for (const auto& n : named) std::fprintf(stderr, "member 0 made /dev/shm/%s\n", n.c_str());
    kill(std::stoi(*pid), SIGKILL);
    return named.empty() && (*published)[0] == '@' ? 0 : 3;
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
  EXPECT_EQ(outcomes[0].signal, SIGKILL) << Describe(outcomes);
  EXPECT_TRUE(outcomes[1].exited && outcomes[1].exit_code == 0) << Describe(outcomes);
  EXPECT_TRUE(LeftoverSegments(job.job_id()).empty());
}

// Exit code of a member that could not enter a new pid namespace.
constexpr int kNoPidNamespace = 77;

// Given member 0 in a pid namespace of its own (its pid means another process to the others,
// so /proc/<pid>/fd/<fd> is not its segment), when the group is created, then the others notice
// (device and inode differ), member 0 gives the segment a name, they map it by name, the
// collectives work, the name is gone afterwards, and they do not take the process with member
// 0's pid number for member 0 (it started at another time). Members in one pid namespace use the
// anonymous segment.
TEST(ShmFailure, MembersThatCannotOpenTheAnonymousSegmentGetItByName) {
  ShmJob::Options options;
  options.size = 3;
  ShmJob job(options);
  const std::string named_prefix = "/dev/shm/" + control::ShmSegmentPrefix(job.job_id());
  auto outcomes = job.RunRaw([&](int rank, control::KvClient& kv, const std::string& scope) {
    auto run = [&]() -> int {
      runtime::ShmOptions o = job.GroupOptions(rank, kv, scope);
      o.timeout = std::chrono::milliseconds(20000);
      auto comm = runtime::CreateShmCommunicator(o);
      if (!comm.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", rank, comm.status().ToString().c_str());
        return 4;
      }
      if (rank != 0 && !MapsOnly(named_prefix)) return 5;
      std::vector<float> buf(1000, static_cast<float>(rank + 1));
      for (int i = 0; i < 3; ++i) {
        std::fill(buf.begin(), buf.end(), static_cast<float>(rank + 1));
        Status s = (*comm)->Allreduce(buf.data(), 1000, DataType::kFloat32, ReduceOp::kSum);
        if (!s.ok() || buf[0] != 6.0f || buf[999] != 6.0f) return 6;
      }
      if (!(*comm)->Barrier().ok()) return 7;
      // Member 0's pid here is another process (pid 1, this machine's init): it is not
      // watched as member 0, nor read from; members 1 and 2 see each other.
      runtime::ShmSegment::Options so;
      so.kv = &kv;
      so.scope = scope + "/segment";
      so.job_id = job.job_id();
      so.rank = rank;
      so.size = 3;
      so.half_bytes = 4096;
      so.timeout = std::chrono::milliseconds(20000);
      auto seg = runtime::ShmSegment::Open(so);
      if (!seg.ok()) return 11;
      if (rank == 0) return 0;
      const int peer = 3 - rank;
      std::fprintf(stderr, "rank %d sees member 0 as pid %d, member %d as pid %d\n", rank,
                   (*seg)->VisiblePid(0), peer, (*seg)->VisiblePid(peer));
      const bool seen = (*seg)->VisiblePid(0) == 0 && (*seg)->VisiblePid(peer) > 0;
      // Neither exits before the other has looked: a peer gone before Open watched it is
      // rightly not visible (it failed that way once in ten runs under load).
      if (!kv.Set(scope + "/looked/" + std::to_string(rank), "1").ok() ||
          !kv.Wait(scope + "/looked/" + std::to_string(peer), std::chrono::seconds(20)).ok()) {
        return 13;
      }
      return seen ? 0 : 12;
    };
    if (rank != 0) return run();
    if (unshare(CLONE_NEWPID) != 0) {
      // Tell the others, so that they stop waiting.
      (void)kv.Set(scope + "/shm/name", "!no pid namespace here");
      return kNoPidNamespace;
    }
    const pid_t child = fork();  // the first process of the new namespace: pid 1 there
    if (child == 0) _exit(getpid() == 1 ? run() : 8);
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) return 9;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 10;
  });
  if (outcomes[0].exited && outcomes[0].exit_code == kNoPidNamespace) {
    GTEST_SKIP() << "no new pid namespace here (unshare needs CAP_SYS_ADMIN)";
  }
  EXPECT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
  for (const auto& out : outcomes)
    EXPECT_TRUE(out.exited && out.exit_code == 0) << Describe(outcomes);
  EXPECT_TRUE(LeftoverSegments(job.job_id()).empty());
}

// Given a member that asks for other staging than member 0 (HVD_SHM_BUFFER_BYTES), when the
// group is created, then it fails naming the setting, without member 0 naming the segment for
// it, and nothing is left in /dev/shm once member 0 has given up.
TEST(ShmFailure, AMemberWithOtherStagingFailsNamingTheSetting) {
  ShmJob::Options options;
  options.size = 2;
  ShmJob job(options);
  auto outcomes = job.RunRaw([&](int rank, control::KvClient& kv, const std::string& scope) {
    runtime::ShmOptions o = job.GroupOptions(rank, kv, scope);
    o.buffer_bytes = rank == 0 ? size_t{1} << 20 : size_t{2} << 20;
    o.timeout = std::chrono::milliseconds(rank == 0 ? 1000 : 20000);
    auto comm = runtime::CreateShmCommunicator(o);
    std::fprintf(stderr, "rank %d: %s\n", rank, comm.status().ToString().c_str());
    if (rank == 0) return comm.status().code() == StatusCode::kTimeout ? 0 : 1;
    const std::string& m = comm.status().message();
    return comm.status().code() == StatusCode::kInvalidArgument &&
                   m.find("member 0's segment has another size") != std::string::npos &&
                   m.find("HVD_SHM_BUFFER_BYTES") != std::string::npos &&
                   LeftoverSegments(job.job_id()).empty()
               ? 0
               : 2;
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
  for (const auto& out : outcomes) {
    EXPECT_TRUE(out.exited && out.exit_code == 0) << Describe(outcomes);
  }
  EXPECT_TRUE(LeftoverSegments(job.job_id()).empty());
}

// Given members in one pid namespace, their segment is anonymous: no name, ever.
TEST(ShmFailure, MembersOfOneNamespaceMapAnAnonymousSegment) {
  ShmJob::Options options;
  options.size = 2;
  ShmJob job(options);
  auto outcomes = job.Run([](Communicator& comm) -> int {
    if (!MapsOnly("/dev/shm/#")) return 5;
    return comm.Barrier().ok() ? 0 : 7;
  });
  EXPECT_TRUE(job.error().empty()) << job.error() << "; " << Describe(outcomes);
  for (const auto& out : outcomes)
    EXPECT_TRUE(out.exited && out.exit_code == 0) << Describe(outcomes);
}

}  // namespace
}  // namespace hvd::test
