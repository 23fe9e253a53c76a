#include "vxperf/output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace vxperf {

void write_line(int fd, std::string_view line) {
  std::string buffer;
  buffer.reserve(line.size() + 1);
  buffer.append(line);
  buffer.push_back('\n');
  const char* data = buffer.data();
  std::size_t left = buffer.size();
  // One write(2) per line: with O_APPEND, concurrent writers of whole lines never interleave. The
  // loop only continues after a partial write (a full disk, a signal).
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

StandardOutput::StandardOutput(std::string json_base) : base_(std::move(json_base)) {}

StandardOutput::~StandardOutput() {
  if (fd_ >= 0) ::close(fd_);
}

std::string StandardOutput::records_path(const std::string& base, int rank, int world_size) {
  if (base.empty()) return {};
  // Ranks share a filesystem: each keeps its own file, so no two processes append to one path.
  return world_size > 1 ? base + ".rank" + std::to_string(rank) : base;
}

void StandardOutput::log(std::string_view line) { write_line(STDERR_FILENO, line); }

void StandardOutput::record(std::string_view json_line, int rank, int world_size) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string path = records_path(base_, rank, world_size);
  if (path.empty()) return;
  if (path != open_path_) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    open_path_ = path;
    std::error_code ignored;
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0 && !reported_failure_) {
      reported_failure_ = true;
      std::string message = "vxperf: cannot write records to " + path + ": " +
                            std::strerror(errno) + "; measuring on without them";
      write_line(STDERR_FILENO, message);
    }
  }
  if (fd_ >= 0) write_line(fd_, json_line);
}

void MemoryOutput::log(std::string_view line) {
  std::lock_guard<std::mutex> lock(mu_);
  logs_.emplace_back(line);
}

void MemoryOutput::record(std::string_view json_line, int, int) {
  std::lock_guard<std::mutex> lock(mu_);
  records_.emplace_back(json_line);
}

std::vector<std::string> MemoryOutput::logs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return logs_;
}

std::vector<std::string> MemoryOutput::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

}  // namespace vxperf
