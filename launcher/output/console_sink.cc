#include "launcher/output/console_sink.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

namespace hvd::launcher {

// One console that can block (a terminal, a pipe, a socket), its queue and its writer thread.
struct ConsoleQueue {
  std::deque<std::pair<int, std::string>> queue;  // (fd, text), written in this order
  bool writing = false;
  std::atomic<bool> closed{false};  // a write failed with EPIPE
  std::condition_variable wake;
};

namespace {

// Never destroyed: the writer threads run until the process ends.
struct Consoles {
  std::mutex mu;
  std::map<std::pair<dev_t, ino_t>, ConsoleQueue*> sinks;
  std::condition_variable idle;  // notified whenever a write completes
  std::atomic<size_t> backlog{0};
  bool abandoned = false;  // ConsoleFlush gave up: what is left is dropped
};

Consoles& All() {
  static Consoles* consoles = new Consoles;
  return *consoles;
}

void RunWriter(ConsoleQueue* sink) {
  // Every signal stays with hvdrun's other threads (its signalfd); an EPIPE write's SIGPIPE is
  // this thread's, blocked, and the write says EPIPE.
  sigset_t all;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
  Consoles& c = All();
  std::unique_lock<std::mutex> lock(c.mu);
  while (true) {
    sink->wake.wait(lock, [&] { return !sink->queue.empty(); });
    auto [fd, text] = std::move(sink->queue.front());
    sink->queue.pop_front();
    sink->writing = true;
    lock.unlock();
    const int error = sink->closed ? EPIPE : WriteWhole(fd, text);
    lock.lock();
    sink->writing = false;
    if (error == EPIPE) sink->closed = true;
    c.backlog -= text.size();
    c.idle.notify_all();
  }
}

bool Stalls(const struct stat& st) { return !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode); }

// The queue of `fd`'s file, made (with its thread) on first use; nullptr for a file that
// cannot stall, or a closed descriptor.
ConsoleQueue* QueueOf(int fd) {
  struct stat st = {};
  if (::fstat(fd, &st) != 0 || !Stalls(st)) return nullptr;
  Consoles& c = All();
  std::lock_guard<std::mutex> lock(c.mu);
  ConsoleQueue*& queue = c.sinks[{st.st_dev, st.st_ino}];
  if (queue == nullptr) {
    queue = new ConsoleQueue;
    std::thread(RunWriter, queue).detach();
    static const bool registered = std::atexit([] { ConsoleFlush(); }) == 0;
    (void)registered;
  }
  return queue;
}

bool Quitting() {
  sigset_t pending;
  if (::sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1 ||
         sigismember(&pending, SIGHUP) == 1;
}

}  // namespace

int WriteWhole(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p = {fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);
    } else {
      return n < 0 ? errno : EIO;
    }
  }
  return 0;
}

Console::Console(int fd) : fd_(fd), queue_(QueueOf(fd)) {}

void Console::Write(std::string text) const {
  if (text.empty()) return;
  if (queue_ == nullptr) {
    (void)WriteWhole(fd_, text);  // a regular file; a full disk loses the line, as before
    return;
  }
  Consoles& c = All();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.abandoned) return;
  c.backlog += text.size();
  queue_->queue.emplace_back(fd_, std::move(text));
  queue_->wake.notify_one();
}

bool Console::closed() const { return queue_ != nullptr && queue_->closed.load(); }

void ConsoleWrite(int fd, std::string text) { Console(fd).Write(std::move(text)); }

bool ConsoleBacklogged() { return All().backlog.load() > kConsoleBacklogBytes; }

void ConsoleFlush(std::chrono::milliseconds most, bool watch_signals) {
  Consoles& c = All();
  const auto deadline = std::chrono::steady_clock::now() + most;
  std::unique_lock<std::mutex> lock(c.mu);
  auto done = [&] {
    if (c.abandoned) return true;
    for (const auto& [file, sink] : c.sinks) {
      if (!sink->queue.empty() || sink->writing) return false;
    }
    return true;
  };
  while (!done() && std::chrono::steady_clock::now() < deadline && !(watch_signals && Quitting())) {
    c.idle.wait_for(lock, std::chrono::milliseconds(100));
  }
  if (done()) return;
  // The reader is still stalled: hvdrun goes without the rest (a write in progress stays
  // blocked in its thread, which ends with the process).
  c.abandoned = true;
  for (auto& [file, sink] : c.sinks) {
    for (const auto& [fd, text] : sink->queue) c.backlog -= text.size();
    sink->queue.clear();
  }
}

}  // namespace hvd::launcher
