// Writing files as vxperf's own outputs do: whole lines in one write(2), and files replaced all at
// once (written under a temporary name, renamed into place), so that a reader never sees half of
// either. The `vxperf` command writes its outputs with these too.
//
// Thread safety: free functions are safe from any thread; one AtomicFile belongs to one thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vxperf {

// Writes all of `size` bytes at `data` to `fd`, resuming after a partial write or a signal.
// Returns 0 or the errno of the failure (EIO when the descriptor took nothing).
int write_all(int fd, const char* data, std::size_t size);

// `line` and its newline on `fd` in one write where the descriptor takes it whole (so lines of
// concurrent writers of an O_APPEND file never interleave). False, with errno set, on failure.
bool write_line(int fd, std::string_view line);

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
  std::string open(const std::string& path);
  int fd() const { return fd_; }
  // Flushes the file to disk and renames it into place: "" or why not (the file is then removed).
  std::string commit();
  // Removes the temporary file (what the destructor does when commit() was never called);
  // `error`'s text.
  std::string fail(int error);

 private:
  void discard();

  std::string path_, target_;
  bool special_ = false, committed_ = false;
  int fd_ = -1;
};

// Writes `content` to `path` through an AtomicFile: "" or why the file could not be written.
std::string write_file_atomically(const std::string& path, std::string_view content);

}  // namespace vxperf
