// The measured-peak cache (vxperf/peak.h): one JSON file that every front end reads and writes.
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/enum_names.h"
#include "vxperf/file_io.h"
#include "vxperf/peak.h"

namespace vxperf {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kFormat = "vxperf-peaks";
constexpr int kVersion = 1;

constexpr std::array<const char*, 3> kSourceNames = {"table", "env", "measured"};
static_assert(kSourceNames.size() == internal::enumerators_through(PeakSource::kMeasured));

// The file's entries, or nullopt (with `why`) when the file is not ours to read. A missing file
// is an empty cache.
std::optional<Json> read_entries(const std::string& path, std::string* why) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return Json::array();
    *why = std::string("cannot be read: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  Json json = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    *why = "is not JSON";
    return std::nullopt;
  }
  if (!json.is_object() || !json.contains("format") || json["format"] != Json(kFormat)) {
    *why = "is not a vxperf peak cache (no \"format\": \"vxperf-peaks\")";
    return std::nullopt;
  }
  if (!json.contains("version") || json["version"] != Json(kVersion)) {
    *why = "has a version this vxperf does not read";
    return std::nullopt;
  }
  auto peaks = json.find("peaks");
  if (peaks == json.end() || !peaks->is_array()) {
    *why = "has no \"peaks\" list";
    return std::nullopt;
  }
  return *peaks;
}

Json to_json(const MeasuredPeak& p) {
  return Json{
      {"device", p.device}, {"dtype", dtype_name(p.dtype)}, {"tflops", p.tflops}, {"n", p.n},
      {"gemms", p.gemms},   {"seconds", p.seconds},         {"ts", p.ts},         {"by", p.by}};
}

// One entry, or nullopt when it is malformed (a rate that is not a positive finite number).
std::optional<MeasuredPeak> from_json(const Json& e) {
  if (!e.is_object()) return std::nullopt;
  MeasuredPeak p;
  auto text = [&](const char* key) {
    auto it = e.find(key);
    return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto number = [&](const char* key) {
    auto it = e.find(key);
    return it != e.end() && it->is_number() ? it->get<double>() : std::nan("");
  };
  p.device = text("device");
  auto dtype = parse_dtype(text("dtype"));
  if (p.device.empty() || !dtype) return std::nullopt;
  p.dtype = *dtype;
  p.tflops = number("tflops");
  if (!std::isfinite(p.tflops) || p.tflops <= 0) return std::nullopt;
  double n = number("n");
  double gemms = number("gemms");
  p.n = std::isfinite(n) ? static_cast<std::int64_t>(n) : 0;
  p.gemms = std::isfinite(gemms) ? static_cast<std::int64_t>(gemms) : 0;
  p.seconds = std::isfinite(number("seconds")) ? number("seconds") : 0;
  p.ts = std::isfinite(number("ts")) ? number("ts") : 0;
  p.by = text("by");
  return p;
}

bool make_dirs(const std::string& dir, std::string* error) {
  if (dir.empty()) return true;
  std::string partial;
  std::stringstream parts(dir);
  std::string part;
  if (dir[0] == '/') partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = "cannot make " + partial + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

std::string trimmed(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

const char* peak_source_name(PeakSource source) {
  return internal::enum_name(source, kSourceNames, "table");
}

std::string peak_cache_path(const EnvLookup& env) {
  auto xdg = env("XDG_CACHE_HOME");
  // The XDG spec: a relative value is invalid and is to be ignored.
  if (xdg && !xdg->empty() && (*xdg)[0] == '/') return *xdg + "/vxperf/peaks.json";
  auto home = env("HOME");
  if (home && !home->empty()) return *home + "/.cache/vxperf/peaks.json";
  return {};
}

std::optional<MeasuredPeak> load_cached_peak(const std::string& path, const std::string& device,
                                             Dtype dtype,
                                             const std::function<void(const std::string&)>& warn) {
  if (path.empty()) return std::nullopt;
  std::string why;
  auto entries = read_entries(path, &why);
  if (!entries) {
    if (warn) warn("vxperf: the peak cache " + path + " " + why + "; ignored");
    return std::nullopt;
  }
  for (const Json& e : *entries) {
    auto peak = from_json(e);
    if (!peak) {
      // Only an entry that names this device and dtype is worth a word.
      if (e.is_object() && e.contains("device") && e["device"] == Json(device) && warn) {
        warn("vxperf: the peak cache " + path + " holds an unusable entry for " + device +
             "; ignored");
      }
      continue;
    }
    if (peak->device == device && peak->dtype == dtype) return peak;
  }
  return std::nullopt;
}

std::vector<MeasuredPeak> load_cached_peaks(const std::string& path,
                                            const std::function<void(const std::string&)>& warn) {
  std::vector<MeasuredPeak> out;
  if (path.empty()) return out;
  std::string why;
  auto entries = read_entries(path, &why);
  if (!entries) {
    if (warn) warn("vxperf: the peak cache " + path + " " + why + "; ignored");
    return out;
  }
  for (const Json& e : *entries) {
    if (auto peak = from_json(e)) out.push_back(std::move(*peak));
  }
  return out;
}

bool store_cached_peak(const std::string& path, const MeasuredPeak& peak, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  if (path.empty()) {
    *error = "no cache folder (neither XDG_CACHE_HOME nor HOME is set)";
    return false;
  }
  auto slash = path.rfind('/');
  if (slash != std::string::npos && !make_dirs(path.substr(0, slash), error)) return false;
  std::string why;
  // An unreadable or foreign file is replaced: the folder is vxperf's own.
  Json entries = read_entries(path, &why).value_or(Json::array());
  Json kept = Json::array();
  for (const Json& e : entries) {
    auto p = from_json(e);
    if (p && !(p->device == peak.device && p->dtype == peak.dtype)) kept.push_back(e);
  }
  kept.push_back(to_json(peak));
  Json file = {{"format", kFormat}, {"version", kVersion}, {"peaks", kept}};
  // Replaced all at once: readers never see half.
  if (std::string why = write_file_atomically(path, file.dump(1) + "\n"); !why.empty()) {
    *error = "cannot write " + path + ": " + why;
    return false;
  }
  return true;
}

std::string cpu_device_key(int threads) {
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) model = trimmed(line.substr(colon + 1));
      break;
    }
  }
  if (model.empty()) model = "unknown";
  return "cpu: " + model + " (" + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") +
         ")";
}

std::optional<Calibration> calibrate_peak(const std::string& device, Dtype dtype,
                                          const PeakProbe& probe, bool force,
                                          const std::function<void(const std::string&)>& warn,
                                          const std::string& cache_path) {
  std::string path = cache_path.empty() ? peak_cache_path() : cache_path;
  if (!force) {
    if (auto cached = load_cached_peak(path, device, dtype, warn)) {
      return Calibration{*cached, true};
    }
  }
  if (!probe) return std::nullopt;
  std::optional<MeasuredPeak> measured = probe();
  if (!measured || !std::isfinite(measured->tflops) || measured->tflops <= 0) return std::nullopt;
  measured->device = device;
  measured->dtype = dtype;
  if (measured->ts == 0) {
    measured->ts =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  std::string error;
  if (!path.empty() && !store_cached_peak(path, *measured, &error) && warn) {
    warn("vxperf: the measured peak is not cached: " + error);
  }
  return Calibration{*measured, false};
}

}  // namespace vxperf
