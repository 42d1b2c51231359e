// gloo-comm-bench: times the Gloo Communicator itself (no runtime, no launcher) to pick its
// algorithm thresholds. Forks N ranks; the parent serves a launcher::RendezvousServer and each
// rank connects with a KvClient, as under hvdrun.
//
//   gloo-comm-bench -n 2 [-r rounds] [-s 4K,64K,...] [-o allreduce,rsag,reducescatter,
//                    allgather,broadcast,alltoall,bitand,bitor,barrier,gatherbytes,idle]
//                    [-b gloo|tcp]
//
// -b tcp times hvd's own TCP communicator (runtime/transports/tcp/tcp_communicator.h) instead of
// Gloo's.
//
// rsag = ReduceScatter + Allgatherv called separately (the direct allreduce path, whatever the
// size); bitand/bitor = BitwiseAnd/BitwiseOr of bytes/8 words (the coordinator's per-cycle
// response-cache vectors). Per size: warm-up, iterations calibrated to ~0.3 s, per-round max
// over ranks, median. allocs/op: heap allocations per op in the timed rounds, counted by
// alloc_counter.cc over every thread of the rank's process (gloo's event loop included); the
// median round's maximum over ranks. The steady-state target is 0.
//
// The result check: after each size's timed rounds (outside them: in no printed time), the same
// op once more on rank-distinctive data with an exact answer, every element of this rank's
// result compared (n ranks, rank r; `count` floats, per = count / n):
//   allreduce      in[i] = r + 1 + i % 7: n(n+1)/2 + n*(i % 7) everywhere
//   rsag           the same for the first n*per elements (the rest keeps this rank's input)
//   reducescatter  the same input: rank me expects out[j] = n(n+1)/2 + n*((me*per + j) % 7)
//   allgather      rank r's element i is r*1000 + i % 1000, found at out[r*count + i]
//   alltoall       rank r sends rank k in[k*per + j] = r*100 + k + j % 5: rank me expects
//                  out[k*per + j] = k*100 + me + j % 5
//   broadcast      rank 0 holds 7 + i % 13, the others -1: 7 + i % 13 everywhere
//   bitand, bitor  word w of rank r is ~b or b, b = 1 << ((r + w) % 64): the AND is ~(the OR of
//                  every rank's b), the OR that OR
//   gatherbytes    rank r's text is 'a' + (r + i) % 26: rank 0 gathers each rank's, then
//                  everyone holds rank 0's
//   barrier, idle  nothing to check
// A wrong element is printed to stderr ("gloo-comm-bench: CHECK FAILED: GLOO allreduce 4096 B
// rank 1: element 17 is 3.0, expected 5.0"), the ranks agree (a max over ranks) and every rank
// exits 3 (so does the parent) before the size's row; rank 0 prints "# results checked" at the
// end. The buffers are zeros again after a check, as every timed round had them.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/alloc_counter.h"
#include "bench/byte_size.h"
#include "bench/check_value.h"
#include "common/kv_client.h"
#include "launcher/rendezvous/rendezvous_server.h"
#include "runtime/transports/gloo/gloo_communicator.h"
#include "runtime/transports/tcp/tcp_communicator.h"

namespace {

using hvd::runtime::Communicator;
using hvd::runtime::DataType;
using hvd::runtime::ReduceOp;
using Clock = std::chrono::steady_clock;

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ',')) {
    if (!x.empty()) out.push_back(x);
  }
  return out;
}

void Ok(const hvd::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    _exit(1);
  }
}

double MaxOverRanks(Communicator& comm, double v) {
  Ok(comm.Allreduce(&v, 1, DataType::kFloat64, ReduceOp::kMax));
  return v;
}

// ---- the result check (untimed; the file comment says what each op is checked with) ----

float SumInput(int rank, int64_t i) { return static_cast<float>(rank + 1 + i % 7); }
float SumExpected(int n, int64_t i) { return static_cast<float>(n * (n + 1) / 2 + n * (i % 7)); }

// "" when got[j] == want(j) for j < count, else what is wrong with the first element that is not.
template <typename Want>
std::string FirstWrong(const float* got, int64_t count, Want&& want) {
  for (int64_t j = 0; j < count; ++j) {
    const float w = want(j);
    if (got[j] == w) continue;
    return "element " + std::to_string(j) + " is " + CheckValueText(got[j]) + ", expected " +
           CheckValueText(w);
  }
  return "";
}

// A bitand/bitor check bit: rank r's in word w.
uint64_t CheckBit(int rank, size_t w) {
  return uint64_t{1} << ((static_cast<size_t>(rank) + w) % 64);
}

// Whether the check knows `op` (barrier and an unknown name have nothing to check).
bool Checkable(const std::string& op) {
  for (const char* known : {"allreduce", "rsag", "reducescatter", "allgather", "alltoall",
                            "broadcast", "bitand", "bitor", "gatherbytes"}) {
    if (op == known) return true;
  }
  return false;
}

// gatherbytes' check text of rank r.
std::string CheckText(int rank, size_t bytes) {
  std::string text(bytes, 'a');
  for (size_t i = 0; i < bytes; ++i) text[i] = static_cast<char>('a' + (rank + i) % 26);
  return text;
}

int RunRank(Communicator& comm, const std::vector<std::string>& ops,
            const std::vector<size_t>& sizes, int rounds) {
  const int n = comm.size(), me = comm.rank();
  bool checked = false;
  std::vector<float> buf(*std::max_element(sizes.begin(), sizes.end()) / 4 + n);
  std::vector<float> out(buf.size() * n);
  for (const std::string& op : ops) {
    if (op == "idle") {
      // Does anything spin while no collective runs? Process CPU time (all threads) over 2 s.
      Ok(comm.Barrier());
      const std::clock_t c0 = std::clock();
      std::this_thread::sleep_for(std::chrono::seconds(2));
      const double cpu_ms = 1e3 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
      std::printf("## idle rank %d: %.1f ms CPU in 2 s asleep\n", comm.rank(), cpu_ms);
      Ok(comm.Barrier());
      continue;
    }
    if (comm.rank() == 0) {
      std::printf("## %s n=%d\n%10s %6s %10s %10s %10s %10s\n", op.c_str(), n, "bytes", "iters",
                  "med_us", "min_us", "busbw_GB/s", "allocs/op");
    }
    for (size_t bytes : sizes) {
      const int64_t count = static_cast<int64_t>(bytes / 4);
      std::vector<int64_t> counts(n, count / n), part_bytes(n, (count / n) * 4);
      const std::vector<int64_t> all_bytes(n, count * 4), split_bytes(n, (count / n) * 4);
      std::vector<uint64_t> bits(bytes / 8, ~uint64_t{0});
      std::string text(bytes, 'x');
      std::vector<std::string> gathered;
      auto once = [&] {
        if (op == "allreduce") {
          Ok(comm.Allreduce(buf.data(), count, DataType::kFloat32, ReduceOp::kSum));
        } else if (op == "rsag") {
          float* mine = buf.data() + comm.rank() * (count / n);
          Ok(comm.ReduceScatter(buf.data(), mine, counts, DataType::kFloat32, ReduceOp::kSum));
          Ok(comm.Allgatherv(mine, buf.data(), part_bytes));
        } else if (op == "reducescatter") {
          Ok(comm.ReduceScatter(buf.data(), out.data(), counts, DataType::kFloat32,
                                ReduceOp::kSum));
        } else if (op == "allgather") {
          Ok(comm.Allgatherv(buf.data(), out.data(), all_bytes));
        } else if (op == "alltoall") {
          Ok(comm.Alltoallv(buf.data(), split_bytes, out.data(), split_bytes));
        } else if (op == "bitand") {
          Ok(comm.BitwiseAnd(&bits));
        } else if (op == "bitor") {
          Ok(comm.BitwiseOr(&bits));
        } else if (op == "broadcast") {
          Ok(comm.Broadcast(buf.data(), count * 4, 0));
        } else if (op == "barrier") {
          Ok(comm.Barrier());
        } else if (op == "gatherbytes") {
          Ok(comm.GatherBytes(text, 0, &gathered));
          Ok(comm.BroadcastBytes(&text, 0));
        }
      };
      for (int w = 0; w < 3; ++w) once();
      Clock::time_point c0 = Clock::now();
      for (int w = 0; w < 3; ++w) once();
      double est = MaxOverRanks(comm, std::chrono::duration<double>(Clock::now() - c0).count() / 3);
      int iters = std::clamp(static_cast<int>(0.3 / est), 3, 5000);
      if (MaxOverRanks(comm, -static_cast<double>(iters)) != -static_cast<double>(iters) ||
          MaxOverRanks(comm, static_cast<double>(iters)) != static_cast<double>(iters)) {
        std::fprintf(stderr, "rank %d: ranks disagree on iters (%d, est %.9f)\n", comm.rank(),
                     iters, est);
        _exit(5);
      }
      std::vector<double> rt, allocs;
      rt.reserve(rounds);
      allocs.reserve(rounds);
      for (int r = 0; r < rounds; ++r) {
        Ok(comm.Barrier());
        const uint64_t a0 = HeapAllocations();
        Clock::time_point t0 = Clock::now();
        for (int i = 0; i < iters; ++i) once();
        const double seconds = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
        const double per_op = static_cast<double>(HeapAllocations() - a0) / iters;
        rt.push_back(MaxOverRanks(comm, seconds));
        allocs.push_back(MaxOverRanks(comm, per_op));
      }
      // The check: the op once more (once()) on check data.
      if (Checkable(op)) {
        const int64_t per = count / n;
        std::string problem;
        if (op == "allreduce" || op == "rsag" || op == "reducescatter") {
          for (int64_t i = 0; i < count; ++i) buf[i] = SumInput(me, i);
        } else if (op == "allgather") {
          for (int64_t i = 0; i < count; ++i) buf[i] = static_cast<float>(me * 1000 + i % 1000);
        } else if (op == "alltoall") {
          for (int64_t i = 0; i < n * per; ++i)
            buf[i] = static_cast<float>(me * 100 + i / per + (i % per) % 5);
        } else if (op == "broadcast") {
          for (int64_t i = 0; i < count; ++i)
            buf[i] = me == 0 ? static_cast<float>(7 + i % 13) : -1.0f;
        } else if (op == "bitand" || op == "bitor") {
          for (size_t w = 0; w < bits.size(); ++w)
            bits[w] = op == "bitor" ? CheckBit(me, w) : ~CheckBit(me, w);
        } else if (op == "gatherbytes") {
          text = CheckText(me, bytes);
        }
        std::fill(out.begin(), out.end(), -2.0f);  // no earlier result can pass
        once();
        if (op == "allreduce") {
          problem = FirstWrong(buf.data(), count, [&](int64_t i) { return SumExpected(n, i); });
        } else if (op == "rsag") {  // past n*per: this rank's own input, untouched
          problem = FirstWrong(buf.data(), count, [&](int64_t i) {
            return i < n * per ? SumExpected(n, i) : SumInput(me, i);
          });
        } else if (op == "reducescatter") {
          problem =
              FirstWrong(out.data(), per, [&](int64_t j) { return SumExpected(n, me * per + j); });
        } else if (op == "allgather") {
          problem = FirstWrong(out.data(), n * count, [&](int64_t j) {
            return static_cast<float>(j / count * 1000 + (j % count) % 1000);
          });
        } else if (op == "alltoall") {
          problem = FirstWrong(out.data(), n * per, [&](int64_t j) {
            return static_cast<float>(j / per * 100 + me + (j % per) % 5);
          });
        } else if (op == "broadcast") {
          problem = FirstWrong(buf.data(), count,
                               [&](int64_t i) { return static_cast<float>(7 + i % 13); });
        } else if (op == "bitand" || op == "bitor") {
          for (size_t w = 0; w < bits.size() && problem.empty(); ++w) {
            uint64_t any = 0;
            for (int r = 0; r < n; ++r) any |= CheckBit(r, w);
            const uint64_t want = op == "bitor" ? any : ~any;
            if (bits[w] == want) continue;
            char line[96];
            std::snprintf(line, sizeof(line), "word %zu is 0x%016llx, expected 0x%016llx", w,
                          static_cast<unsigned long long>(bits[w]),
                          static_cast<unsigned long long>(want));
            problem = line;
          }
        } else if (op == "gatherbytes") {
          if (me == 0 && gathered.size() != static_cast<size_t>(n)) {
            problem = "gathered " + std::to_string(gathered.size()) + " texts, expected " +
                      std::to_string(n);
          }
          for (int r = 0; me == 0 && problem.empty() && r < n; ++r) {
            if (gathered[r] != CheckText(r, bytes)) {
              problem = "the text gathered from rank " + std::to_string(r) + " differs";
            }
          }
          if (problem.empty() && text != CheckText(0, bytes)) {
            problem = "the broadcast text is not rank 0's";
          }
        }
        if (!problem.empty()) {
          std::fprintf(stderr, "gloo-comm-bench: CHECK FAILED: %s %s %zu B rank %d: %s\n",
                       comm.name(), op.c_str(), bytes, me, problem.c_str());
        }
        if (MaxOverRanks(comm, problem.empty() ? 0.0 : 1.0) != 0.0) return 3;
        std::fill(buf.begin(), buf.end(), 0.0f);  // as the timed rounds had them
        std::fill(out.begin(), out.end(), 0.0f);
        checked = true;
      }
      std::sort(rt.begin(), rt.end());
      std::sort(allocs.begin(), allocs.end());
      const double med = rt[rt.size() / 2];
      const bool reduces = op == "allreduce" || op == "rsag" || op == "bitand" || op == "bitor";
      const double factor = reduces ? 2.0 * (n - 1) / n : op == "broadcast" ? 1.0 : (n - 1.0) / n;
      if (comm.rank() == 0) {
        std::printf("%10zu %6d %10.1f %10.1f %10.3f %10.2f\n", bytes, iters, med * 1e6, rt[0] * 1e6,
                    bytes / med / 1e9 * factor, allocs[allocs.size() / 2]);
        std::fflush(stdout);
      }
    }
  }
  if (me == 0 && checked) std::printf("# results checked\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 2, rounds = 5;
  std::string backend = "gloo";
  std::string ops = "allreduce", sizes_arg = "4K,64K,256K,1M,16M,64M";
  // Checked, so a misspelt op, "4K" or "-n 0" is an error and not a quiet default (until
  // 2026-12-02 getopt and atoi took them).
  CLI::App app{"Times hvd's Gloo (or TCP) Communicator alone: forks N ranks", "gloo-comm-bench"};
  app.add_option("-n", n, "Ranks")->check(CLI::Range(2, 64))->capture_default_str();
  app.add_option("-r", rounds, "Timed rounds per size")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("-s", sizes_arg, "Sizes in bytes, comma-separated (4096, 4K, 1M)")
      ->check([](const std::string& text) {
        const std::vector<std::string> sizes = Split(text);
        if (sizes.empty()) return std::string("no size");
        for (const std::string& s : sizes) {
          const std::string error = hvd::bench::ByteSizeError(s);
          if (!error.empty()) return error;
        }
        return std::string();
      })
      ->capture_default_str();
  app.add_option("-o", ops, "Ops, comma-separated")
      ->check([](const std::string& text) {
        static const std::string known =
            "allreduce, rsag, reducescatter, allgather, alltoall, bitand, bitor, broadcast, "
            "barrier, gatherbytes, idle";
        const std::vector<std::string> ops = Split(text);
        if (ops.empty()) return std::string("no op");
        for (const std::string& op : ops) {
          if ((", " + known + ", ").find(", " + op + ", ") == std::string::npos) {
            return "unknown op '" + op + "' (" + known + ")";
          }
        }
        return std::string();
      })
      ->capture_default_str();
  app.add_option("-b", backend, "The communicator")
      ->check(CLI::IsMember({"gloo", "tcp"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  std::vector<size_t> sizes;
  for (const std::string& s : Split(sizes_arg)) sizes.push_back(*hvd::bench::ParseByteSize(s));
  hvd::launcher::RendezvousServerOptions server_options;
  for (size_t i = 0; i < server_options.key.size(); ++i) server_options.key[i] = uint8_t(i + 3);
  server_options.job_id = "gloo-comm-bench";
  auto server = hvd::launcher::RendezvousServer::Start(server_options);
  Ok(server.status());
  std::fflush(stdout);
  std::vector<pid_t> kids;
  for (int rank = 0; rank < n; ++rank) {
    pid_t pid = fork();
    if (pid < 0) {  // the ranks started wait for this one: stop them
      std::perror("gloo-comm-bench: fork");
      for (pid_t kid : kids) kill(kid, SIGTERM);
      for (pid_t kid : kids) waitpid(kid, nullptr, 0);
      return 1;
    }
    if (pid == 0) {
      alarm(600);
      auto kv = hvd::control::KvClient::Connect("127.0.0.1", (*server)->port(), server_options.key,
                                                server_options.job_id, std::chrono::seconds(10));
      Ok(kv.status());
      hvd::Result<std::unique_ptr<Communicator>> comm = hvd::Status::Internal("no backend");
      if (backend == "tcp") {
        hvd::runtime::TcpOptions options;
        options.kv = kv->get();
        options.scope = "bench";
        options.rank = rank;
        options.size = n;
        options.key = server_options.key;
        options.job_id = server_options.job_id;
        comm = hvd::runtime::CreateTcpCommunicator(options);
      } else {
        hvd::runtime::GlooOptions options;
        options.kv = kv->get();
        options.scope = "bench";
        options.rank = rank;
        options.size = n;
        comm = hvd::runtime::CreateGlooCommunicator(options);
      }
      Ok(comm.status());
      int rc = RunRank(**comm, Split(ops), sizes, rounds);
      std::fflush(stdout);
      // Leave only once every rank is done: a rank that exits while a peer still waits on
      // its last collective's messages fails that peer ("Connection closed by peer").
      Ok((*kv)->Set("done/" + std::to_string(rank), "1"));
      for (int r = 0; r < n; ++r) {
        Ok((*kv)->Wait("done/" + std::to_string(r), std::chrono::seconds(60)).status());
      }
      _exit(rc);
    }
    kids.push_back(pid);
  }
  // In the order they end: a rank that failed stops the others, which would otherwise wait for
  // it until their alarm (10 minutes). The exit code is the first failure's (a rank's code, or
  // 128 + its signal), not that of the ranks stopped after it.
  int first_failure = 0;
  std::vector<pid_t> running = kids;
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = wait(&status);
    if (pid < 0) break;
    running.erase(std::remove(running.begin(), running.end(), pid), running.end());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code == 0) continue;
    if (first_failure != 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) continue;
    std::fprintf(stderr, "pid %d: %s %d\n", pid, WIFEXITED(status) ? "exit" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    if (first_failure == 0) {
      first_failure = code;
      for (pid_t kid : running) kill(kid, SIGTERM);  // not yet reaped: still ours
    }
  }
  return first_failure;
}
