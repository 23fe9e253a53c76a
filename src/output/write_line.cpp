#include "output/write_line.h"

#include <unistd.h>

#include <cerrno>
#include <string>

namespace vxperf::internal {

bool write_line(int fd, std::string_view line) {
  std::string buffer;
  buffer.reserve(line.size() + 1);
  buffer.append(line);
  buffer.push_back('\n');
  const char* data = buffer.data();
  std::size_t left = buffer.size();
  // The loop only continues after a partial write (a full disk, a signal).
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

LogFn stderr_log() {
  return [](std::string_view line) { write_line(STDERR_FILENO, line); };
}

}  // namespace vxperf::internal
