// Where log lines and JSON records go.
//
// Thread safety: implementations must accept concurrent calls; each call writes whole lines.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace vxperf {

class Output {
 public:
  virtual ~Output() = default;
  // A human-readable line: metrics lines start with "[Perf][rank"; notices and warnings do not.
  virtual void log(std::string_view line) = 0;
  // One JSON record (no newline) from `rank` of a world of `world_size`.
  virtual void record(std::string_view json_line, int rank, int world_size) = 0;
};

// Log lines to stderr; records appended to `json_base` (".rank{N}" suffix when the world size is
// above 1), one write(2) per line so that concurrent writers never interleave. A missing
// directory is created; a path that cannot be written is reported once on stderr, and
// measurement goes on without it. Empty `json_base`: records are dropped.
class StandardOutput final : public Output {
 public:
  explicit StandardOutput(std::string json_base);
  ~StandardOutput() override;
  void log(std::string_view line) override;
  void record(std::string_view json_line, int rank, int world_size) override;

  // The file records go to for `rank` in a world of `world_size` ("" when records are dropped).
  static std::string records_path(const std::string& base, int rank, int world_size);

 private:
  std::mutex mu_;
  std::string base_;
  std::string open_path_;
  int fd_ = -1;
  bool reported_failure_ = false;
};

// Collects everything in memory (tests, replay).
class MemoryOutput final : public Output {
 public:
  void log(std::string_view line) override;
  void record(std::string_view json_line, int rank, int world_size) override;
  std::vector<std::string> logs() const;
  std::vector<std::string> records() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> logs_;
  std::vector<std::string> records_;
};

// Writes a line followed by '\n' to a file descriptor with a single write(2) where possible.
void write_line(int fd, std::string_view line);

}  // namespace vxperf
