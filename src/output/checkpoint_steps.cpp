#include "output/checkpoint_steps.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "schema/json.h"

namespace vxperf::internal {
namespace {

constexpr std::string_view kSuffix = ".checkpoints";
constexpr std::string_view kRank = ".rank";

// Whether `name` is the file of `path_for` of a records file of `base_name`: the base's own
// (a world of one) or a rank's (".rank" and digits after it).
bool is_job_file(std::string_view name, std::string_view base_name) {
  if (name.size() < 1 + base_name.size() + kSuffix.size() || name.front() != '.' ||
      name.substr(1, base_name.size()) != base_name ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return false;
  }
  std::string_view rank = name.substr(1 + base_name.size());
  rank.remove_suffix(kSuffix.size());
  if (rank.empty()) return true;
  if (rank.substr(0, kRank.size()) != kRank || rank.size() == kRank.size()) return false;
  rank.remove_prefix(kRank.size());
  return std::all_of(rank.begin(), rank.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

CheckpointSteps::CheckpointSteps(LogFn notice)
    : out_(std::move(notice), "checkpoint steps",
           "a restore in a later attempt will not know its step") {}

std::string CheckpointSteps::path_for(const std::string& records_path) {
  if (records_path.empty()) return {};
  const std::size_t slash = records_path.rfind('/');
  const std::size_t name = slash == std::string::npos ? 0 : slash + 1;
  return records_path.substr(0, name) + "." + records_path.substr(name) + std::string(kSuffix);
}

std::vector<std::string> CheckpointSteps::job_files(const std::string& records_base) {
  std::vector<std::string> files;
  if (records_base.empty()) return files;
  const std::size_t slash = records_base.rfind('/');
  const std::size_t name = slash == std::string::npos ? 0 : slash + 1;
  const std::string folder = records_base.substr(0, name);
  const std::string_view base_name = std::string_view(records_base).substr(name);
  std::error_code error;
  std::filesystem::directory_iterator it(folder.empty() ? "." : folder, error);
  for (; !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    std::string entry = it->path().filename().string();
    if (is_job_file(entry, base_name)) files.push_back(folder + entry);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string CheckpointSteps::normal_path(std::string_view checkpoint) {
  if (checkpoint.empty()) return {};
  std::filesystem::path path{std::string(checkpoint)};
  if (path.is_relative()) {
    std::error_code error;
    std::filesystem::path cwd = std::filesystem::current_path(error);
    if (!error) path = cwd / path;
  }
  std::string normal = path.lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

void CheckpointSteps::saved(const std::string& file, std::string_view checkpoint, std::int64_t step,
                            double ts) {
  const std::string path = normal_path(checkpoint);
  saved_here_[path] = Save{step, ts};
  if (file.empty()) return;
  if (out_.path() != file && !out_.open(file, /*truncate=*/false)) return;
  Json line = {{"checkpoint", path}, {"step", step}, {"ts", ts}};
  out_.append(line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
}

std::optional<CheckpointSteps::Save> CheckpointSteps::last_save_in(const std::string& file,
                                                                   std::string_view checkpoint) {
  std::ifstream in(file, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::optional<Save> save;
  // Whole lines only: what follows the last newline is a line another rank is writing now.
  for (std::size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1) {
    // A torn or foreign line is passed over: the last whole save of the checkpoint wins.
    Json line = Json::parse(text.begin() + static_cast<std::ptrdiff_t>(at),
                            text.begin() + static_cast<std::ptrdiff_t>(end), nullptr,
                            /*allow_exceptions=*/false);
    if (!line.is_object()) continue;
    auto name = line.find("checkpoint");
    auto step = line.find("step");
    if (name == line.end() || step == line.end() || !name->is_string() ||
        !step->is_number_integer() || name->get_ref<const std::string&>() != checkpoint) {
      continue;
    }
    auto ts = line.find("ts");
    if (std::int64_t value = step->get<std::int64_t>(); value >= 0) {
      save = Save{value, ts != line.end() && ts->is_number() ? ts->get<double>() : 0.0};
    }
  }
  return save;
}

std::optional<std::int64_t> CheckpointSteps::step_of(const std::vector<std::string>& files,
                                                     std::string_view checkpoint) const {
  const std::string path = normal_path(checkpoint);
  std::optional<Save> latest;
  if (auto it = saved_here_.find(path); it != saved_here_.end()) latest = it->second;
  for (const std::string& file : files) {
    std::optional<Save> save = last_save_in(file, path);
    if (save && (!latest || save->ts > latest->ts)) latest = save;
  }
  if (!latest) return std::nullopt;
  return latest->step;
}

}  // namespace vxperf::internal
