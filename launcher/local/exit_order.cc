#include "launcher/local/exit_order.h"

#include <errno.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "launcher/outcome/wait_status.h"

namespace hvd::launcher {

int ExitPriority(int wait_status, bool signalled) {
  if (WaitStatusIsSuccess(wait_status)) return 2;
  return WIFSIGNALED(wait_status) && !signalled ? 0 : 1;
}

void OrderExits(std::vector<std::pair<int, int>>& exits,
                const std::function<bool(int id)>& signalled) {
  std::stable_sort(exits.begin(), exits.end(), [&signalled](const auto& a, const auto& b) {
    return ExitPriority(a.second, signalled(a.first)) < ExitPriority(b.second, signalled(b.first));
  });
}

void PendingExits::Take(const Hooks& hooks) {
  if (exits_.empty()) return;
  OrderExits(exits_, hooks.signalled);
  const auto [first, status] = exits_.front();
  if (ExitPriority(status, hooks.signalled(first)) == 1 && Holds(first, hooks)) return;
  hold_deadline_.reset();
  std::vector<std::pair<int, int>> exits = std::move(exits_);
  exits_.clear();
  for (const auto& [id, wait_status] : exits) hooks.take(id, wait_status);
}

bool PendingExits::Holds(int failed, const Hooks& hooks) {
  const Clock::time_point now = Clock::now();
  if (hold_deadline_ && now >= *hold_deadline_) return false;  // waited long enough
  std::optional<int> waited_for = hooks.unreported();
  if (!waited_for) return false;
  if (!hold_deadline_) {
    hold_deadline_ = now + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(kHoldForGuardianS));
    hooks.on_hold(failed, *waited_for);
  }
  return true;
}

RankProcessWatch::RankProcessWatch(pid_t rank_pid, pid_t pid) {
  if (rank_pid <= 0 || rank_pid == pid) return;
  fd_ = static_cast<int>(::syscall(SYS_pidfd_open, rank_pid, 0));
  if (fd_ < 0) fd_ = errno == ESRCH ? kGone : kNone;
}

RankProcessWatch& RankProcessWatch::operator=(RankProcessWatch&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, kNone);
  }
  return *this;
}

bool RankProcessWatch::Ended() const {
  if (fd_ == kGone) return true;
  if (fd_ < 0) return false;
  pollfd ended = {fd_, POLLIN, 0};
  return ::poll(&ended, 1, 0) > 0;
}

void RankProcessWatch::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = kNone;
}

}  // namespace hvd::launcher
