#include "sinks/records_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "sinks/write_line.h"

namespace vxperf::detail {

RecordsFile::RecordsFile(std::string base_path, LogFn notice)
    : base_(std::move(base_path)), notice_(notice ? std::move(notice) : stderr_log()) {}

RecordsFile::~RecordsFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string RecordsFile::path_for(const std::string& base, int rank, int world_size) {
  if (base.empty()) return {};
  return world_size > 1 ? base + ".rank" + std::to_string(rank) : base;
}

void RecordsFile::on_request(const RequestRecord& record, const RequestDetail&) {
  append(to_json_line(record), record.rank, record.world_size);
}

void RecordsFile::on_train_window(const TrainWindowRecord& record, const WindowDetail&) {
  append(to_json_line(record), record.rank, record.world_size);
}

void RecordsFile::append(std::string_view json_line, int rank, int world_size) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string path = path_for(base_, rank, world_size);
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
      notice_("vxperf: cannot write records to " + path + ": " + std::strerror(errno) +
              "; measuring on without them");
    }
  }
  if (fd_ >= 0) write_line(fd_, json_line);
}

}  // namespace vxperf::detail
