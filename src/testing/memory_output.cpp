#include "vxperf/testing.h"

namespace vxperf::testing {

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

std::vector<std::string> MemoryOutput::logs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return logs_;
}

std::vector<std::string> MemoryOutput::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

std::vector<std::string> MemoryOutput::all_records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return all_records_;
}

std::vector<RequestRecord> MemoryOutput::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::vector<RequestDetail> MemoryOutput::request_details() const {
  std::lock_guard<std::mutex> lock(mu_);
  return request_details_;
}

std::vector<TrainWindowRecord> MemoryOutput::windows() const {
  std::lock_guard<std::mutex> lock(mu_);
  return windows_;
}

std::vector<TrainEndRecord> MemoryOutput::ends() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ends_;
}

}  // namespace vxperf::testing
