#include "trace/trace_writer.h"

namespace vxperf::internal {

TraceWriter::TraceWriter(std::string base_path, LogFn notice)
    : base_(std::move(base_path)),
      file_(std::move(notice), "the trace", "measuring on without it") {}

TraceWriter::~TraceWriter() = default;

bool TraceWriter::has_header() const {
  std::lock_guard<std::mutex> lock(mu_);
  return header_;
}

void TraceWriter::write_header(const std::string& config_line, int rank, int world_size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (header_) return;
  header_ = true;
  std::string path = world_size > 1 ? base_ + ".rank" + std::to_string(rank) : base_;
  // Truncated: a trace is one run, and a second config line would make it an invalid script.
  if (!file_.open(path, /*truncate=*/true)) {
    held_.clear();
    return;
  }
  buffer_.clear();
  buffer_ += config_line;
  buffer_ += '\n';
  for (const auto& line : held_) {
    buffer_ += line;
    buffer_ += '\n';
  }
  held_.clear();
  held_.shrink_to_fit();
  // Without its config line the trace would be no script at all: nothing more goes in.
  if (!file_.append(buffer_)) file_.close();
}

void TraceWriter::write(const std::string& line) { write_block({line}); }

void TraceWriter::write_block(const std::vector<std::string>& lines) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!header_) {
    held_.insert(held_.end(), lines.begin(), lines.end());
    return;
  }
  if (!file_.is_open()) return;
  buffer_.clear();
  for (const auto& line : lines) {
    buffer_ += line;
    buffer_ += '\n';
  }
  file_.append(buffer_);
}

}  // namespace vxperf::internal
