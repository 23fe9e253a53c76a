#include "output/checkpoint_steps.h"

#include <fstream>

#include "schema/json.h"

namespace vxperf::internal {

CheckpointSteps::CheckpointSteps(LogFn notice)
    : out_(std::move(notice), "checkpoint steps",
           "a restore in a later attempt will not know its step") {}

std::string CheckpointSteps::path_for(const std::string& records_path) {
  if (records_path.empty()) return {};
  const std::size_t slash = records_path.rfind('/');
  const std::size_t name = slash == std::string::npos ? 0 : slash + 1;
  return records_path.substr(0, name) + "." + records_path.substr(name) + ".checkpoints";
}

void CheckpointSteps::saved(const std::string& file, std::string_view checkpoint,
                            std::int64_t step, double ts) {
  saved_here_[std::string(checkpoint)] = step;
  if (file.empty()) return;
  if (out_.path() != file && !out_.open(file, /*truncate=*/false)) return;
  Json line = {{"checkpoint", checkpoint}, {"step", step}, {"ts", ts}};
  out_.append(line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
}

std::optional<std::int64_t> CheckpointSteps::step_of(const std::string& file,
                                                     std::string_view checkpoint) const {
  if (auto it = saved_here_.find(checkpoint); it != saved_here_.end()) return it->second;
  if (file.empty()) return std::nullopt;
  std::ifstream in(file);
  std::optional<std::int64_t> step;
  std::string text;
  while (std::getline(in, text)) {
    // A torn or foreign line is passed over: the last whole save of the checkpoint wins.
    Json line = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!line.is_object()) continue;
    auto name = line.find("checkpoint");
    auto at = line.find("step");
    if (name == line.end() || at == line.end() || !name->is_string() ||
        !at->is_number_integer() || name->get_ref<const std::string&>() != checkpoint) {
      continue;
    }
    if (std::int64_t value = at->get<std::int64_t>(); value >= 0) step = value;
  }
  return step;
}

}  // namespace vxperf::internal
