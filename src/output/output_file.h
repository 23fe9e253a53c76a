// A file the engine writes whole lines to (the records file, the live trace), made so that the
// program never suffers from it and the file never lies:
//
// - its descriptor is above 2 and close-on-exec: with stdin, stdout or stderr closed, the
//   program's own writes to 0-2 never land in it, and a child the program execs never holds it;
// - opening never blocks: a FIFO without a reader is a failure, said once, not a hang; on a pipe
//   a write waits for the reader a bounded time, and SIGPIPE never reaches the program;
// - a write that fails part way (a full disk, RLIMIT_FSIZE) is taken back, so the file holds only
//   whole lines and the next line never glues onto a torn one; the first failure is said once,
//   with the path and the reason, and later lines are tried again (the disk may free up).
//
// Thread safety: none; its owner serializes the calls.
#pragma once

#include <string>
#include <string_view>

#include "vxperf/sink.h"

namespace vxperf::internal {

class OutputFile {
 public:
  // `what` names the contents in the notices ("records", "the trace"); `consequence` says what
  // the run does without them ("measuring on without them").
  OutputFile(LogFn notice, std::string what, std::string consequence);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Opens `path` for appending (or truncated), making its directory; false, said once, when it
  // cannot be. Closes the file open before.
  bool open(const std::string& path, bool truncate);
  void close();
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

  // Writes `lines` (one or more whole lines, each ending in '\n') all or nothing. False when
  // they were not written (said once per file).
  bool append(std::string_view lines);

  // The descriptor, for tests; -1 when closed.
  int fd() const { return fd_; }

 private:
  void report(const std::string& reason);

  LogFn notice_;
  std::string what_;
  std::string consequence_;
  std::string path_;
  int fd_ = -1;
  bool regular_ = false;  // a regular file: a partial write can be truncated away
  bool broken_ = false;   // a pipe holding a torn line: nothing more is written to it
  bool stalled_ = false;  // a pipe's reader let the last wait run out: lines are not waited for
  bool reported_ = false;
};

}  // namespace vxperf::internal
