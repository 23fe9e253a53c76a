#include "vxperf/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace vxperf {

int write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

bool write_line(int fd, std::string_view line) {
  std::string whole;
  whole.reserve(line.size() + 1);
  whole.append(line).push_back('\n');
  if (int error = write_all(fd, whole.data(), whole.size())) {
    errno = error;
    return false;
  }
  return true;
}

std::string AtomicFile::open(const std::string& path) {
  discard();
  path_ = path;
  committed_ = false;
  struct stat st {};
  special_ = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
  // This process's and this file's own name: two writers of one path, in two processes or two
  // threads, never share a temporary file.
  static std::atomic<unsigned> counter{0};
  target_ = special_ ? path
                     : path + ".tmp-" + std::to_string(::getpid()) + "-" +
                           std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (special_ ? O_TRUNC : O_EXCL);
  fd_ = ::open(target_.c_str(), flags, 0666);
  if (fd_ < 0) {
    int error = errno;
    target_.clear();
    return std::strerror(error);
  }
  return {};
}

std::string AtomicFile::commit() {
  if (!special_ && ::fsync(fd_) != 0 && errno != EINVAL) return fail(errno);
  int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) return fail(errno);
  if (!special_ && ::rename(target_.c_str(), path_.c_str()) != 0) return fail(errno);
  committed_ = true;
  return {};
}

std::string AtomicFile::fail(int error) {
  discard();
  return std::strerror(error);
}

void AtomicFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!committed_ && !special_ && !target_.empty()) ::unlink(target_.c_str());
  target_.clear();
}

std::string write_file_atomically(const std::string& path, std::string_view content) {
  AtomicFile file;
  if (std::string why = file.open(path); !why.empty()) return why;
  if (int error = write_all(file.fd(), content.data(), content.size())) return file.fail(error);
  return file.commit();
}

}  // namespace vxperf
