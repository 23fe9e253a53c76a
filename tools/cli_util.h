// Argument parsing shared by the commands: --help, numbers that must be whole and in range, and
// the one-line error every command prints before returning 2.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
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
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    int error = stdout_error() != 0 ? stdout_error() : errno;
    std::fprintf(stderr, "vxperf%s%s: cannot write standard output%s%s\n", command ? " " : "",
                 command ? command : "", error ? ": " : "", error ? std::strerror(error) : "");
    if (rc == 0) rc = 2;
  }
  return rc;
}

// Writes `content` to `path` under a temporary name in the same folder, renamed over `path` once
// complete, so that a failed write (a full disk, a file size limit) leaves no partial file posing
// as a whole one, and an older `path` as it was. A device or FIFO is written in place. Returns ""
// or why the file could not be written.
inline std::string write_file_atomically(const std::string& path, const std::string& content) {
  struct stat st {};
  bool special = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
  std::string target = special ? path : path + ".tmp-" + std::to_string(::getpid());
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (special ? O_TRUNC : O_EXCL);
  int fd = ::open(target.c_str(), flags, 0666);
  if (fd < 0) return std::strerror(errno);
  auto fail = [&](int error) {
    ::close(fd);
    if (!special) ::unlink(target.c_str());
    return std::string(std::strerror(error));
  };
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(n < 0 ? errno : EIO);
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (!special && ::fsync(fd) != 0 && errno != EINVAL) return fail(errno);
  if (::close(fd) != 0) {
    int error = errno;
    if (!special) ::unlink(target.c_str());
    return std::strerror(error);
  }
  if (!special && ::rename(target.c_str(), path.c_str()) != 0) {
    int error = errno;
    ::unlink(target.c_str());
    return std::strerror(error);
  }
  return {};
}

// `line` and its newline on `fd`, in one writev where the descriptor takes it whole (so lines of
// concurrent writers never interleave). False, with errno set, on failure.
inline bool write_line(int fd, std::string_view line) {
  std::string whole;
  whole.reserve(line.size() + 1);
  whole.append(line).push_back('\n');
  std::size_t done = 0;
  while (done < whole.size()) {
    iovec part{const_cast<char*>(whole.data() + done), whole.size() - done};
    ssize_t n = ::writev(fd, &part, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    done += static_cast<std::size_t>(n);
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
