#include "script/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sinks/write_line.h"

namespace vxperf::detail {

TraceWriter::~TraceWriter() {
  if (fd_ >= 0) ::close(fd_);
}

bool TraceWriter::has_header() const {
  std::lock_guard<std::mutex> lock(mu_);
  return header_;
}

void TraceWriter::write_header(const std::string& config_line, int rank, int world_size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (header_) return;
  header_ = true;
  std::string path = world_size > 1 ? base_ + ".rank" + std::to_string(rank) : base_;
  std::error_code ignored;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
  // Truncated: a trace is one run, and a second config line would make it an invalid script.
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    failed_ = true;
    notice_("vxperf: cannot write the trace to " + path + ": " + std::strerror(errno) +
            "; measuring on without it");
    held_.clear();
    return;
  }
  emit(config_line);
  for (const auto& line : held_) emit(line);
  held_.clear();
  held_.shrink_to_fit();
}

void TraceWriter::write(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!header_) {
    held_.push_back(line);
  } else {
    emit(line);
  }
}

void TraceWriter::write_block(const std::vector<std::string>& lines) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& line : lines) {
    if (!header_) {
      held_.push_back(line);
    } else {
      emit(line);
    }
  }
}

void TraceWriter::emit(const std::string& line) {
  if (failed_ || fd_ < 0) return;
  write_line(fd_, line);
}

}  // namespace vxperf::detail
