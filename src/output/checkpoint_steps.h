// The step each checkpoint was saved at, kept beside the rank's records file (a hidden
// ".<records file's name>.checkpoints", one JSON line per save, out of the way of a glob of the
// rank files), so that a later attempt of the job that
// restores one numbers its steps on from where that checkpoint left off. Without a records file
// they are kept in memory only (a restore in the same process still finds them).
//
// Thread safety: none; the training loop's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "output/output_file.h"

namespace vxperf::internal {

class CheckpointSteps {
 public:
  explicit CheckpointSteps(LogFn notice);

  // The file the saves go to ("" none): beside the records file, hidden.
  static std::string path_for(const std::string& records_path);

  // `checkpoint` (its path, as the program named it) was saved when `step` was the next step.
  void saved(const std::string& file, std::string_view checkpoint, std::int64_t step, double ts);
  // The step a checkpoint was saved at: this process's last save of it, else the file's.
  std::optional<std::int64_t> step_of(const std::string& file, std::string_view checkpoint) const;

 private:
  OutputFile out_;
  std::map<std::string, std::int64_t, std::less<>> saved_here_;
};

}  // namespace vxperf::internal
