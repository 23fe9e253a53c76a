#include "output/records_file.h"

#include "output/stderr_log.h"

namespace vxperf::internal {

RecordsFile::RecordsFile(std::string base_path, LogFn notice)
    : base_(std::move(base_path)),
      file_(notice ? std::move(notice) : stderr_log(), "records", "measuring on without them") {}

RecordsFile::~RecordsFile() = default;

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

void RecordsFile::on_train_end(const TrainEndRecord& record) {
  append(to_json_line(record), record.rank, record.world_size);
}

void RecordsFile::append(std::string_view json_line, int rank, int world_size) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string path = path_for(base_, rank, world_size);
  if (path.empty()) return;
  if (path != open_path_) {
    open_path_ = path;
    file_.open(path, /*truncate=*/false);
  }
  line_.assign(json_line);
  line_.push_back('\n');
  file_.append(line_);
}

}  // namespace vxperf::internal
