// The records file (VIDEOX_PERF_JSON): a sink appending each record's JSON line to the rank's file.
//
// Thread safety: records may arrive from several threads at once.
#pragma once

#include <mutex>
#include <string>
#include <string_view>

#include "output/output_file.h"
#include "vxperf/sink.h"

namespace vxperf::internal {

class RecordsFile final : public RecordSink {
 public:
  // `notice` reports a path that cannot be written, once.
  RecordsFile(std::string base_path, LogFn notice);
  ~RecordsFile() override;

  void on_request(const RequestRecord& record, const RequestDetail& detail) override;
  void on_train_window(const TrainWindowRecord& record, const WindowDetail& detail) override;
  void on_train_end(const TrainEndRecord& record) override;

  // Appends one JSON line for `rank` of a world of `world_size`. Ranks share a filesystem, so each
  // keeps its own file (".rank{N}" when the world is larger than one); one write(2) per line; a
  // missing directory is created. A line is written whole or not at all (see OutputFile).
  void append(std::string_view json_line, int rank, int world_size);

  // The file records go to for `rank` in a world of `world_size` ("" when `base` is empty).
  static std::string path_for(const std::string& base, int rank, int world_size);

 private:
  std::mutex mu_;
  std::string base_;
  std::string open_path_;
  std::string line_;  // the line with its newline, reused
  OutputFile file_;
};

}  // namespace vxperf::internal
