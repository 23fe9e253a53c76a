// The step each checkpoint was saved at, kept beside the rank's records file (a hidden
// ".<records file's name>.checkpoints", one JSON line per save, out of the way of a glob of the
// rank files), so that a later attempt of the job that restores one numbers its steps on from
// where that checkpoint left off. A rank restoring a checkpoint another rank saved (the main
// process alone saving, as diffusers' scripts do) finds its step in that rank's file: every file
// of the job (the same folder and records name, any rank, any world size) is read, and the latest
// whole save of the checkpoint wins. Without a records file they are kept in memory only (a
// restore in the same process still finds them; another process does not).
//
// Thread safety: none; the training loop's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "output/output_file.h"

namespace vxperf::internal {

class CheckpointSteps {
 public:
  explicit CheckpointSteps(LogFn notice);

  // The file the saves go to ("" none): beside the records file, hidden.
  static std::string path_for(const std::string& records_path);
  // The files every rank of the job whose records go to `records_base` (VIDEOX_PERF_JSON) keeps
  // its saves in, whatever the world size: those of `path_for` of its records files (the base
  // itself, or the base + ".rank<N>") that exist, in name order. None for "" or a folder that
  // cannot be read.
  static std::vector<std::string> job_files(const std::string& records_base);
  // A checkpoint's path as it is kept and looked up: absolute (a relative one is taken from the
  // working directory), lexically normal, without a trailing '/' (as Python's os.path.abspath).
  static std::string normal_path(std::string_view checkpoint);

  // `checkpoint` (its path, as the program named it) was saved when `step` was the next step.
  void saved(const std::string& file, std::string_view checkpoint, std::int64_t step, double ts);
  // The step a checkpoint was saved at: its latest save (by the time each was written) of those
  // this process made and those in `files` (each file's last whole line for it), whichever rank
  // wrote them; nullopt when none holds it.
  std::optional<std::int64_t> step_of(const std::vector<std::string>& files,
                                      std::string_view checkpoint) const;

 private:
  struct Save {
    std::int64_t step = 0;
    double ts = 0;
  };
  // The last whole save of `checkpoint` in `file`.
  static std::optional<Save> last_save_in(const std::string& file, std::string_view checkpoint);

  OutputFile out_;
  std::map<std::string, Save, std::less<>> saved_here_;
};

}  // namespace vxperf::internal
