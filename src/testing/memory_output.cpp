#include "base/locked.h"
#include "vxperf/testing.h"

namespace vxperf::testing {

using internal::copy_under;

LogFn MemoryOutput::log_fn() {
  return [this](std::string_view line) { log(line); };
}

void MemoryOutput::log(std::string_view line) {
  std::lock_guard<std::mutex> lock(mu_);
  logs_.emplace_back(line);
}

void MemoryOutput::on_request(const RequestRecord& record, const RequestDetail& detail) {
  std::string line = to_json_line(record);
  std::lock_guard<std::mutex> lock(mu_);
  all_records_.push_back(line);
  records_.push_back(std::move(line));
  requests_.push_back(record);
  request_details_.push_back(detail);
}

void MemoryOutput::on_train_window(const TrainWindowRecord& record, const WindowDetail&) {
  std::string line = to_json_line(record);
  std::lock_guard<std::mutex> lock(mu_);
  all_records_.push_back(line);
  records_.push_back(std::move(line));
  windows_.push_back(record);
}

void MemoryOutput::on_train_end(const TrainEndRecord& record) {
  std::string line = to_json_line(record);
  std::lock_guard<std::mutex> lock(mu_);
  all_records_.push_back(std::move(line));
  ends_.push_back(record);
}

std::vector<std::string> MemoryOutput::logs() const { return copy_under(mu_, logs_); }

std::vector<std::string> MemoryOutput::records() const { return copy_under(mu_, records_); }

std::vector<std::string> MemoryOutput::all_records() const { return copy_under(mu_, all_records_); }

std::vector<RequestRecord> MemoryOutput::requests() const { return copy_under(mu_, requests_); }

std::vector<RequestDetail> MemoryOutput::request_details() const {
  return copy_under(mu_, request_details_);
}

std::vector<TrainWindowRecord> MemoryOutput::windows() const { return copy_under(mu_, windows_); }

std::vector<TrainEndRecord> MemoryOutput::ends() const { return copy_under(mu_, ends_); }

}  // namespace vxperf::testing
