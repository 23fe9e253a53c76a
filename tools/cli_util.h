// What the commands share: --help, numbers that must be whole and in range, the one-line error
// every command prints before returning 2, standard output that must have been written, output
// streamed onto a descriptor, and the exec of the LibTorch helper. Files are written with
// vxperf/file_io.h, as the library writes its own.
#pragma once

#include <cstdint>
#include <streambuf>
#include <string>
#include <vector>

#include "vxperf/file_io.h"

namespace vxperf::cli {

// Thrown by the parsers below; the command prints "vxperf NAME: message" and returns 2.
struct UsageError {
  std::string message;
};

// `text` as a whole number in [min, max], or a UsageError naming `option`.
std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min,
                       std::int64_t max);
// `text` as a finite number in [min, max], or a UsageError naming `option`.
double parse_double(const std::string& option, const std::string& text, double min, double max);

// Prints `usage` and says so when any argument asks for help.
bool print_help_if_asked(int argc, char** argv, const char* usage);

// The value after an option, or a usage error naming the option.
std::string next_value(int& i, int argc, char** argv);

// Why the first write to standard output failed (0: none has); finish_output says it.
int& stdout_error();

// Prints `text` on standard output, keeping the reason of a failure for the final check in main
// (a later flush that has nothing left to write no longer knows it).
void print(const std::string& text);

// The exit status once standard output is flushed: output that could not be written (a full disk,
// a closed pipe) makes the run a failure, since a status of 0 would say the output is there.
// `command`: the subcommand's name for the message, or nullptr.
int finish_output(int rc, const char* command);

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
  int overflow(int c) override;
  int sync() override { return flush_buffer(); }

 private:
  int flush_buffer();

  int fd_;
  std::vector<char> buf_;
  int error_ = 0;
};

// "" when `path` can be read as an input file, else why not ("is a directory").
std::string input_problem(const std::string& path);

// The commands that need LibTorch (demo, calibrate's probe, inspect) live in a helper program of
// their own, `vxperf-torch`, so that the others start without loading it. `vxperf NAME ARGS...`
// execs `HELPER NAME ARGS...` (the same arguments, output and exit status): the helper beside this
// executable (a build tree), else ../libexec/vxperf/ from it (an installed tree). Returns only
// when the helper cannot be run, saying why in one line (exit status 2).
int exec_torch_helper(const char* helper, const char* command, int argc, char** argv);

}  // namespace vxperf::cli
