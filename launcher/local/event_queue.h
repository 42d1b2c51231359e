#ifndef HVD_LAUNCHER_LOCAL_EVENT_QUEUE_H_
#define HVD_LAUNCHER_LOCAL_EVENT_QUEUE_H_

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace hvd::launcher {

// Items handed from another thread (the rendezvous server's I/O thread, through its observers)
// to an event loop that polls event_fd(): readable from a Push until the next TakeAll. What the
// elastic job's ready reports and the runtime's stack requests travel in. Thread-safe.
template <typename T>
class EventQueue {
 public:
  EventQueue() : event_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~EventQueue() {
    if (event_fd_ >= 0) ::close(event_fd_);
  }
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  int event_fd() const { return event_fd_; }

  void Push(std::vector<T> items) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queued_.insert(queued_.end(), std::make_move_iterator(items.begin()),
                     std::make_move_iterator(items.end()));
    }
    uint64_t one = 1;
    ssize_t ignored = ::write(event_fd_, &one, sizeof(one));
    (void)ignored;
  }

  // Everything pushed since the last call, in order.
  std::vector<T> TakeAll() {
    uint64_t count = 0;
    ssize_t ignored = ::read(event_fd_, &count, sizeof(count));  // resets the counter
    (void)ignored;
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(queued_, {});
  }

 private:
  int event_fd_ = -1;
  std::mutex mu_;
  std::vector<T> queued_;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_EVENT_QUEUE_H_
