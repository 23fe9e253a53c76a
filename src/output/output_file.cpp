#include "output/output_file.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

namespace vxperf::internal {
namespace {

// How long a write waits for a pipe's reader to make room, at most, per call.
constexpr int kPipeWaitMs = 1000;

// Keeps a SIGPIPE raised by this thread's write to a pipe whose reader is gone from reaching the
// program (whose default action is to die): blocked for the write, then consumed if it was ours.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    if (sigpending(&pending) == 0) was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &set_, &old_) == 0;
  }
  ~SigpipeGuard() {
    if (!blocked_) return;
    if (raised_ && !was_pending_) {
      timespec zero{};
      while (sigtimedwait(&set_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  void raised() { raised_ = true; }

 private:
  sigset_t set_;
  sigset_t old_;
  bool was_pending_ = false;
  bool blocked_ = false;
  bool raised_ = false;
};

int elapsed_ms(std::chrono::steady_clock::time_point since) {
  using namespace std::chrono;
  return static_cast<int>(duration_cast<milliseconds>(steady_clock::now() - since).count());
}

}  // namespace

OutputFile::OutputFile(LogFn notice, std::string what, std::string consequence)
    : notice_(std::move(notice)), what_(std::move(what)), consequence_(std::move(consequence)) {}

OutputFile::~OutputFile() { close(); }

void OutputFile::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void OutputFile::report(const std::string& reason) {
  if (reported_) return;
  reported_ = true;
  if (notice_) notice_("vxperf: cannot write " + what_ + " to " + path_ + ": " + reason);
}

bool OutputFile::open(const std::string& path, bool truncate) {
  close();
  path_ = path;
  broken_ = false;
  std::error_code ignored;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
  // O_NONBLOCK: a FIFO with no reader fails (ENXIO) instead of blocking the program in open().
  int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK | (truncate ? O_TRUNC : 0);
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    int error = errno;
    report((error == ENXIO ? std::string("a FIFO with no reader") : std::strerror(error)) + "; " +
           consequence_);
    return false;
  }
  if (fd <= STDERR_FILENO) {
    // 0-2 are the program's: with one of them closed, its own output would land in this file.
    int high = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    int error = errno;
    ::close(fd);
    if (high < 0) {
      report(std::string(std::strerror(error)) + "; " + consequence_);
      return false;
    }
    fd = high;
  }
  struct stat st {};
  regular_ = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  fd_ = fd;
  return true;
}

bool OutputFile::append(std::string_view lines) {
  if (fd_ < 0 || broken_) return false;
  std::optional<SigpipeGuard> guard;
  if (!regular_) guard.emplace();
  const char* data = lines.data();
  std::size_t written = 0;
  int error = 0;
  auto started = std::chrono::steady_clock::now();
  while (written < lines.size()) {
    ssize_t n = ::write(fd_, data + written, lines.size() - written);
    if (n > 0) {
      written += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !regular_) {
      // A pipe whose reader is behind: wait for room, a bounded time (once the reader has let a
      // wait run out, only to finish a line already begun).
      int left = stalled_ && written == 0 ? 0 : kPipeWaitMs - elapsed_ms(started);
      pollfd p{fd_, POLLOUT, 0};
      if (left > 0 && ::poll(&p, 1, left) > 0) continue;
      stalled_ = true;
      error = EAGAIN;
      break;
    }
    error = n < 0 ? errno : EIO;
    if (error == EPIPE && guard) guard->raised();
    break;
  }
  if (written == lines.size()) {
    stalled_ = false;
    return true;
  }
  if (written > 0) {
    // Take the partial lines back, so that the next write starts a line of its own.
    off_t end = regular_ ? ::lseek(fd_, 0, SEEK_CUR) : -1;
    off_t keep = end - static_cast<off_t>(written);
    if (end < 0 || keep < 0 || ::ftruncate(fd_, keep) != 0) {
      broken_ = true;  // a pipe, or a file that cannot be cut: stop before gluing a line onto it
    } else {
      ::lseek(fd_, keep, SEEK_SET);
    }
  }
  std::string reason = error == EAGAIN ? std::string("its reader is not reading")
                                       : std::string(std::strerror(error));
  report(reason + (broken_ ? "; nothing more is written to it"
                           : "; lines that cannot be written are dropped whole, later ones tried"));
  return false;
}

}  // namespace vxperf::internal
