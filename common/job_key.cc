#include "common/job_key.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hvd::control {
namespace {

std::string Errno(int err) { return std::strerror(err); }

}  // namespace

Result<JobKey> GenerateJobKey() {
  JobKey key{};
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
    return Status::Internal("OpenSSL RAND_bytes could not produce a 256-bit job key");
  }
  return key;
}

Result<int> WriteKeyToMemfd(const JobKey& key) {
  // Deliberately not MFD_CLOEXEC: the launcher's children inherit the descriptor.
  int fd = memfd_create("hvd-job-key", MFD_ALLOW_SEALING);
  if (fd < 0) return Status::IoError("memfd_create for the job key failed: " + Errno(errno));
  size_t done = 0;
  while (done < key.size()) {
    ssize_t n = write(fd, key.data() + done, key.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      return Status::IoError("writing the job key to memfd " + std::to_string(fd) +
                             " failed: " + Errno(err));
    }
    done += static_cast<size_t>(n);
  }
  // Sealed so a child cannot alter or truncate the key another child will read.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    int err = errno;
    close(fd);
    return Status::IoError("sealing the job key memfd failed: " + Errno(err));
  }
  return fd;
}

Result<JobKey> ReadKeyFromFd(int fd) {
  const std::string where = "job key descriptor " + std::to_string(fd) + " (HVD_SECRET_FD)";
  struct stat st {};
  if (fstat(fd, &st) != 0) return Status::IoError(where + " is not readable: " + Errno(errno));
  JobKey key{};
  if (st.st_size != static_cast<off_t>(key.size())) {
    return Status::InvalidArgument(where + " holds " + std::to_string(st.st_size) +
                                   " bytes; a job key is exactly " + std::to_string(key.size()));
  }
  size_t done = 0;
  while (done < key.size()) {
    ssize_t n = pread(fd, key.data() + done, key.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IoError("reading " + where + " failed: " + Errno(errno));
    if (n == 0) return Status::InvalidArgument(where + " ended early");
    done += static_cast<size_t>(n);
  }
  return key;
}

}  // namespace hvd::control
