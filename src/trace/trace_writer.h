// The raw event trace of a live run (VIDEOX_PERF_TRACE), in the event-script format, so that
// `vxperf replay` reproduces the run's records. Lines before the config line (model declarations
// made before the first request or step) are held until the topology and device are known.
//
// Thread safety: all members may be called concurrently.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "output/output_file.h"
#include "vxperf/sink.h"

namespace vxperf::internal {

class TraceWriter {
 public:
  // `notice` reports a path that cannot be written, once.
  TraceWriter(std::string base_path, LogFn notice);
  ~TraceWriter();

  bool has_header() const;
  // Opens the file (".rank{N}" when the world is larger than one), writes the config line, then
  // whatever was held. Later calls do nothing.
  void write_header(const std::string& config_line, int rank, int world_size);
  // One event line; held until the header is written.
  void write(const std::string& line);
  // Several lines kept together (one request, one settled step): written whole or not at all.
  void write_block(const std::vector<std::string>& lines);

 private:
  mutable std::mutex mu_;
  std::string base_;
  bool header_ = false;
  OutputFile file_;
  std::string buffer_;  // the lines of one write, reused
  std::vector<std::string> held_;
};

}  // namespace vxperf::internal
