// Argument parsing shared by the commands: --help, numbers that must be whole and in range, and
// the one-line error every command prints before returning 2.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

namespace vxperf::cli {

// Thrown by the parsers below; the command prints "vxperf NAME: message" and returns 2.
struct UsageError {
  std::string message;
};

inline std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min,
                              std::int64_t max) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    throw UsageError{option + " takes a whole number from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", not '" + text + "'"};
  }
  return v;
}

inline double parse_double(const std::string& option, const std::string& text, double min,
                           double max) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < min || v > max) {
    throw UsageError{option + " takes a number from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", not '" + text + "'"};
  }
  return v;
}

// Prints `usage` and says so when any argument asks for help.
inline bool print_help_if_asked(int argc, char** argv, const char* usage) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return true;
    }
  }
  return false;
}

// The value after an option, or a usage error naming the option.
inline std::string next_value(int& i, int argc, char** argv) {
  std::string option = argv[i];
  if (i + 1 >= argc) throw UsageError{option + " needs a value"};
  return argv[++i];
}

// Why the first write to standard output failed (0: none has).
inline int& stdout_error() {
  static int error = 0;
  return error;
}

// Prints `text` on standard output, keeping the reason of a failure for the final check in main
// (a later flush that has nothing left to write no longer knows it).
inline void print(const std::string& text) {
  if (std::fputs(text.c_str(), stdout) == EOF && stdout_error() == 0) stdout_error() = errno;
}

// The exit status once standard output is flushed: output that could not be written (a full disk,
// a closed pipe) makes the run a failure, since a status of 0 would say the output is there.
// `command`: the subcommand's name for the message, or nullptr.
inline int finish_output(int rc, const char* command) {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || stdout_error() != 0) {
    int error = stdout_error() != 0 ? stdout_error() : errno;
    std::fprintf(stderr, "vxperf%s%s: cannot write standard output%s%s\n", command ? " " : "",
                 command ? command : "", error ? ": " : "", error ? std::strerror(error) : "");
    if (rc == 0) rc = 2;
  }
  return rc;
}

// A file written under a temporary name in the same folder and renamed over `path` by commit()
// once complete, so that a failed write (a full disk, a file size limit, an error in the middle of
// a streamed output) leaves no partial file posing as a whole one, and an older `path` as it was:
// a file never committed is removed. A device or FIFO is written in place.
class AtomicFile {
 public:
  AtomicFile() = default;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile() { discard(); }

  // "" or why `path` cannot be written.
  std::string open(const std::string& path) {
    path_ = path;
    struct stat st {};
    special_ = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
    target_ = special_ ? path : path + ".tmp-" + std::to_string(::getpid());
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (special_ ? O_TRUNC : O_EXCL);
    fd_ = ::open(target_.c_str(), flags, 0666);
    return fd_ < 0 ? std::strerror(errno) : std::string();
  }
  int fd() const { return fd_; }

  // Flushes the file to disk and renames it into place: "" or why not (the file is then removed).
  std::string commit() {
    if (!special_ && ::fsync(fd_) != 0 && errno != EINVAL) return fail(errno);
    int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0) return fail(errno);
    if (!special_ && ::rename(target_.c_str(), path_.c_str()) != 0) return fail(errno);
    committed_ = true;
    return {};
  }
  // Removes the temporary file (what a destructor does when commit() was never called);
  // `error`'s text.
  std::string fail(int error) {
    discard();
    return std::strerror(error);
  }

 private:
  void discard() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!committed_ && !special_ && !target_.empty()) ::unlink(target_.c_str());
    target_.clear();
  }

  std::string path_, target_;
  bool special_ = false, committed_ = false;
  int fd_ = -1;
};

// Writes all of `size` bytes at `data` to `fd`; 0 or the errno of the failure.
inline int write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

// Writes `content` to `path` through an AtomicFile. Returns "" or why the file could not be
// written.
inline std::string write_file_atomically(const std::string& path, const std::string& content) {
  AtomicFile file;
  if (std::string why = file.open(path); !why.empty()) return why;
  if (int error = write_all(file.fd(), content.data(), content.size())) return file.fail(error);
  return file.commit();
}

// An output stream buffer onto a descriptor (64 KiB at a time), for output streamed as it is made.
// The first write error is kept (error()) and later output dropped.
class FdStreamBuf : public std::streambuf {
 public:
  explicit FdStreamBuf(int fd) : fd_(fd), buf_(1 << 16) { drop(); }
  ~FdStreamBuf() override { sync(); }
  FdStreamBuf(const FdStreamBuf&) = delete;
  FdStreamBuf& operator=(const FdStreamBuf&) = delete;
  // 0 or the errno of the first failed write.
  int error() const { return error_; }
  // Forgets what is buffered and not yet written (a failed run's last part).
  void drop() { setp(buf_.data(), buf_.data() + buf_.size()); }

 protected:
  int overflow(int c) override {
    if (flush_buffer() != 0) return traits_type::eof();
    if (c != traits_type::eof()) {
      *pptr() = static_cast<char>(c);
      pbump(1);
    }
    return c == traits_type::eof() ? traits_type::not_eof(c) : c;
  }
  int sync() override { return flush_buffer(); }

 private:
  int flush_buffer() {
    std::size_t n = static_cast<std::size_t>(pptr() - pbase());
    if (n > 0 && error_ == 0) error_ = write_all(fd_, pbase(), n);
    setp(buf_.data(), buf_.data() + buf_.size());
    return error_ == 0 ? 0 : -1;
  }

  int fd_;
  std::vector<char> buf_;
  int error_ = 0;
};

// `line` and its newline on `fd`, in one write where the descriptor takes it whole (so lines of
// concurrent writers never interleave). False, with errno set, on failure.
inline bool write_line(int fd, std::string_view line) {
  std::string whole;
  whole.reserve(line.size() + 1);
  whole.append(line).push_back('\n');
  if (int error = write_all(fd, whole.data(), whole.size())) {
    errno = error;
    return false;
  }
  return true;
}

// "" when `path` can be read as an input file, else why not ("is a directory").
inline std::string input_problem(const std::string& path) {
  struct stat st {};
  if (path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return "is a directory";
  }
  return {};
}

// The commands that need LibTorch (demo, calibrate's probe, inspect) live in a helper program of
// their own, `vxperf-torch`, so that the others start without loading it. `vxperf NAME ARGS...`
// execs `HELPER NAME ARGS...` (the same arguments, output and exit status): the helper beside this
// executable (a build tree), else ../libexec/vxperf/ from it (an installed tree). Returns only
// when the helper cannot be run, saying why in one line (exit status 2).
inline int exec_torch_helper(const char* helper, const char* command, int argc, char** argv) {
  std::string dir;
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    dir.assign(self, static_cast<std::size_t>(n));
    dir.erase(dir.rfind('/') + 1);
  }
  std::vector<std::string> candidates = {dir + helper,
                                         dir + "../libexec/vxperf/" + std::string(helper)};
  std::vector<char*> args;
  std::string name = command;
  for (const auto& path : candidates) {
    if (::access(path.c_str(), X_OK) != 0) continue;
    args.clear();
    args.push_back(const_cast<char*>(path.c_str()));
    args.push_back(name.data());
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    args.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    ::execv(path.c_str(), args.data());
    std::fprintf(stderr, "vxperf %s: cannot run %s: %s\n", command, path.c_str(),
                 std::strerror(errno));
    return 2;
  }
  std::fprintf(stderr, "vxperf %s: needs LibTorch, whose commands are in %s, not found beside %s\n",
               command, helper, dir.empty() ? "this program" : dir.c_str());
  return 2;
}

}  // namespace vxperf::cli
