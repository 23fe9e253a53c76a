// The powercap meter (vxperf/powercap.h): the RAPL zones' energy_uj files, read at interval
// boundaries, their gains shared among the open intervals by the time share.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/energy_shares.h"
#include "backends/shared_library.h"
#include "vxperf/powercap.h"

namespace vxperf {
namespace {

namespace fs = std::filesystem;

// A zone's gain since its last reading above this many watts is not a wrap: the counter went
// backwards (no CPU package or DRAM draws 2 kW).
constexpr double kMaxZoneW = 2000;

// The unsigned number a sysfs file holds, or nullopt with *why (strerror, or "not a number").
std::optional<unsigned long long> read_number(const std::string& path, std::string* why) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    *why = std::strerror(errno);
    return std::nullopt;
  }
  char buf[64] = {};
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  bool failed = std::ferror(f) != 0;
  int error = errno;
  std::fclose(f);
  if (failed) {
    *why = std::strerror(error);
    return std::nullopt;
  }
  buf[n] = '\0';
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(buf, &end, 10);
  if (end == buf || errno != 0 || buf[0] == '-') {
    *why = "not a number";
    return std::nullopt;
  }
  while (*end == '\n' || *end == ' ') ++end;
  if (*end != '\0') {
    *why = "not a number";
    return std::nullopt;
  }
  return v;
}

std::string read_text(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return {};
  char buf[128] = {};
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string text(buf, n);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

struct Zone {
  std::string label;   // "intel-rapl:0 (package-0)", for messages
  std::string energy;  // its energy_uj
  std::optional<unsigned long long> max_uj;
  std::optional<unsigned long long> last_uj;  // nullopt: no usable last reading
};

// The package and DRAM zones under `root`, each found once (the tree links subzones both at its
// top and under their parent), in path order.
std::vector<Zone> find_zones(const std::string& root) {
  std::error_code ec;
  std::vector<fs::path> candidates;
  auto rapl = [](const fs::path& p) {
    std::string name = p.filename().string();
    return name.find("rapl") != std::string::npos && name.find("mmio") == std::string::npos;
  };
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!rapl(it->path())) continue;
    candidates.push_back(it->path());
    std::error_code sub_ec;
    for (fs::directory_iterator sub(it->path(), sub_ec), sub_end; !sub_ec && sub != sub_end;
         sub.increment(sub_ec)) {
      if (rapl(sub->path())) candidates.push_back(sub->path());
    }
  }
  std::map<std::string, Zone> zones;  // by canonical path
  for (const fs::path& dir : candidates) {
    std::error_code c;
    fs::path real = fs::canonical(dir, c);
    std::string key = c ? dir.string() : real.string();
    // A dangling link is a zone whose counter cannot be read, not no zone.
    if (zones.count(key) != 0 || !fs::exists(fs::symlink_status(dir / "energy_uj", c))) continue;
    std::string name = read_text(dir / "name");
    if (name.rfind("package", 0) != 0 && name != "dram") continue;
    Zone z;
    z.label = dir.filename().string() + " (" + name + ")";
    z.energy = (dir / "energy_uj").string();
    std::string why;
    z.max_uj = read_number((dir / "max_energy_range_uj").string(), &why);
    zones.emplace(key, std::move(z));
  }
  std::vector<Zone> out;
  for (auto& [key, z] : zones) out.push_back(std::move(z));
  return out;
}

class PowercapMeter final : public DeviceMeter {
 public:
  PowercapMeter(std::vector<Zone> zones, PowercapOptions options, double t)
      : zones_(std::move(zones)), options_(std::move(options)), last_t_(t) {}

  std::uint64_t begin(const std::string&, int) override {
    std::lock_guard<std::mutex> lock(mu_);
    take();
    std::uint64_t id = next_++;
    shares_.open(id);
    return id;
  }

  void end(std::uint64_t id, DeviceReadings& readings) override {
    std::lock_guard<std::mutex> lock(mu_);
    take();
    fill(shares_.close(id), readings);
    marks_.erase(id);
  }

  void cancel(std::uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    shares_.close(id);
    marks_.erase(id);
  }

  void mark(std::uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    take();
    if (auto share = shares_.peek(id)) marks_[id] = *share;
  }

  void end_at_mark(std::uint64_t id, DeviceReadings& readings) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = marks_.find(id);
    if (it == marks_.end()) {
      take();
      fill(shares_.close(id), readings);
      return;
    }
    shares_.close(id);
    fill(it->second, readings);
    marks_.erase(it);
  }

  std::uint64_t roll(std::uint64_t id, DeviceReadings& readings, const std::string&, int) override {
    std::lock_guard<std::mutex> lock(mu_);
    take();
    std::optional<internal::EnergyShares::Share> share = shares_.close(id);
    marks_.erase(id);
    if (!share) return 0;
    fill(share, readings);
    std::uint64_t next = next_++;
    shares_.open(next);
    return next;
  }

 private:
  static void fill(const std::optional<internal::EnergyShares::Share>& share,
                   DeviceReadings& readings) {
    if (share && !share->spoiled) readings.cpu_energy_j = share->energy_j;
  }

  void say_once(const Zone& z, const std::string& key, const std::string& text) {
    if (said_.insert(z.label + "\n" + key).second) {
      say(options_.notice, "[Perf] powercap: " + z.label + ": " + text);
    }
  }

  // Every zone once; their gains since the previous reading shared among the open intervals.
  void take() {
    double t = options_.clock();
    double dt = std::max(0.0, t - last_t_);
    last_t_ = t;
    double gain = 0;
    bool known = true;
    for (Zone& z : zones_) {
      std::string why;
      std::optional<unsigned long long> v = read_number(z.energy, &why);
      if (!v) {
        say_once(z, "read",
                 "cannot read " + z.energy + " (" + why +
                     "); cpu_energy_j left out of the intervals it spans");
        z.last_uj.reset();
        known = false;
        continue;
      }
      if (!z.last_uj) {
        known = false;  // nothing to take its gain from
      } else if (*v >= *z.last_uj) {
        gain += static_cast<double>(*v - *z.last_uj) / 1e6;
      } else if (z.max_uj && *z.last_uj <= *z.max_uj &&
                 static_cast<double>(*z.max_uj - *z.last_uj + *v) / 1e6 <=
                     kMaxZoneW * std::max(dt, 1e-3)) {
        gain += static_cast<double>(*z.max_uj - *z.last_uj + *v) / 1e6;  // it wrapped
      } else {
        say_once(z, "backwards",
                 "energy_uj went backwards (" + std::to_string(*z.last_uj) + " to " +
                     std::to_string(*v) + " uJ); cpu_energy_j left out of that interval");
        known = false;
      }
      z.last_uj = v;
    }
    shares_.advance(dt, known ? std::optional<double>(gain) : std::nullopt,
                    internal::EnergyShares::Source::kCounter);
  }

  std::vector<Zone> zones_;
  PowercapOptions options_;
  std::mutex mu_;
  double last_t_ = 0;
  internal::EnergyShares shares_;
  std::map<std::uint64_t, internal::EnergyShares::Share> marks_;
  std::uint64_t next_ = 1;
  std::set<std::string> said_;
};

}  // namespace

std::shared_ptr<DeviceMeter> make_powercap_meter(const PowercapOptions& options) {
  PowercapOptions o = options;
  if (!o.clock) {
    o.clock = [] {
      using namespace std::chrono;
      return duration<double>(steady_clock::now().time_since_epoch()).count();
    };
  }
  auto not_used = [&](const std::string& what) {
    say(o.notice, "[Perf] powercap not used: " + what + "; no cpu_energy_j");
    return nullptr;
  };
  std::vector<Zone> zones;
  try {
    zones = find_zones(o.root);
  } catch (...) {
    zones.clear();  // an allocation that failed: as if there were none
  }
  if (zones.empty()) return not_used("no RAPL package or DRAM zone under " + o.root);
  // Every zone must be readable now: a partial sum would pass for the host's.
  for (Zone& z : zones) {
    std::string why;
    z.last_uj = read_number(z.energy, &why);
    if (!z.last_uj) return not_used("cannot read " + z.energy + " (" + why + ")");
  }
  double t = o.clock();
  return std::make_shared<PowercapMeter>(std::move(zones), std::move(o), t);
}

}  // namespace vxperf
