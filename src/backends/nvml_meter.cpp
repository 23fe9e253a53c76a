// The NVML meter (vxperf/nvml.h): libnvidia-ml.so.1 through dlopen, the few entry points it uses
// declared here from NVML's documented C API (no NVIDIA header).
#include <dlfcn.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/shared_library.h"
#include "vxperf/nvml.h"

namespace vxperf {
namespace {

// ---- NVML's C API, as documented ------------------------------------------------------------
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlNotSupported = 3;
constexpr int kNvmlClockSm = 1;         // nvmlClockType_t NVML_CLOCK_SM
constexpr int kNvmlTemperatureGpu = 0;  // nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU
using nvmlInit_v2_t = nvmlReturn_t (*)();
using nvmlShutdown_t = nvmlReturn_t (*)();
using nvmlDeviceGetHandleByPciBusId_v2_t = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
using nvmlDeviceGetTotalEnergyConsumption_t = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using nvmlDeviceGetPowerUsage_t = nvmlReturn_t (*)(nvmlDevice_t, unsigned*);
using nvmlDeviceGetClockInfo_t = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*);
using nvmlDeviceGetTemperature_t = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*);
using nvmlDeviceGetCurrentClocksThrottleReasons_t = nvmlReturn_t (*)(nvmlDevice_t,
                                                                     unsigned long long*);
using nvmlErrorString_t = const char* (*)(nvmlReturn_t);

// The clocks-throttle reason bits, lowest first, by the names records carry.
struct Reason {
  unsigned long long bit;
  const char* name;
};
constexpr Reason kReasons[] = {
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
};  // 0x1 (gpu_idle) is not a slowdown

constexpr const char* kLeftOut = "left out";
constexpr double kMaxPowerW = 100000;  // a reading above it makes no sense for one device

struct Library {
  nvmlInit_v2_t init = nullptr;
  nvmlShutdown_t shutdown = nullptr;
  nvmlDeviceGetHandleByPciBusId_v2_t by_bus = nullptr;
  nvmlDeviceGetTotalEnergyConsumption_t energy = nullptr;
  nvmlDeviceGetPowerUsage_t power = nullptr;
  nvmlDeviceGetClockInfo_t clock = nullptr;
  nvmlDeviceGetTemperature_t temperature = nullptr;
  nvmlDeviceGetCurrentClocksThrottleReasons_t throttle = nullptr;
  nvmlErrorString_t error_string = nullptr;
};

void say_to(const NvmlOptions& options, const std::string& line) { say(options.notice, line); }

// What one reading of a device came to (each absent when it could not be read).
struct Sample {
  double t = 0;
  std::optional<unsigned long long> energy_mj;
  std::optional<double> power_w;
  std::optional<unsigned> sm_mhz;
  std::optional<unsigned> temp_c;
  std::optional<unsigned long long> reasons;
};

class NvmlMeter final : public DeviceMeter {
 public:
  NvmlMeter(const Library& lib, NvmlOptions options) : lib_(lib), options_(std::move(options)) {
    if (!options_.clock) {
      options_.clock = [] {
        using namespace std::chrono;
        return duration<double>(steady_clock::now().time_since_epoch()).count();
      };
    }
  }

  ~NvmlMeter() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (sampler_.joinable()) sampler_.join();
    // The library stays loaded: unloading it while a driver thread may run is not safe.
    lib_.shutdown();
  }

  std::uint64_t begin(const std::string& pci_bus_id, int device) override {
    std::lock_guard<std::mutex> lock(mu_);
    Device* d = device_for(pci_bus_id, device);
    if (d == nullptr) return 0;
    Interval interval;
    interval.device = d;
    interval.samples.push_back(read(*d));
    std::uint64_t id = next_++;
    open_.emplace(id, std::move(interval));
    if (!d->counter && options_.sample_period_s > 0 && !sampler_.joinable()) {
      sampler_ = std::thread([this] { sample_loop(); });
    }
    return id;
  }

  void end(std::uint64_t id, DeviceReadings& readings) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_.find(id);
    if (it == open_.end()) return;
    Interval interval = std::move(it->second);
    open_.erase(it);
    interval.samples.push_back(read(*interval.device));
    summarize(interval, readings);
  }

  void cancel(std::uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    open_.erase(id);
  }

 private:
  struct Device {
    nvmlDevice_t handle = nullptr;
    std::string name;     // "cuda:0 (0000:1B:00.0)", for messages
    bool counter = true;  // the energy counter is read (false: power samples stand in)
    bool power = true, clock = true, temperature = true, throttle = true;
  };
  struct Interval {
    Device* device = nullptr;
    std::vector<Sample> samples;  // in time order: the begin, the sampler's, the end
  };

  // Once per device and reason (`key`, else the text itself).
  void say_once(const Device& d, const std::string& reason, const char* key = nullptr) {
    if (said_.insert(d.name + "\n" + (key != nullptr ? std::string(key) : reason)).second) {
      say_to(options_, "[Perf] NVML: " + d.name + ": " + reason);
    }
  }

  std::string error_text(nvmlReturn_t r) const {
    std::string text = "error " + std::to_string(r);
    if (lib_.error_string != nullptr) {
      if (const char* s = lib_.error_string(r)) text += " (" + std::string(s) + ")";
    }
    return text;
  }

  // The device at `bus`, found once; nullptr (said once) when NVML cannot see it.
  Device* device_for(const std::string& bus, int device) {
    auto it = devices_.find(bus);
    if (it != devices_.end()) return it->second.handle != nullptr ? &it->second : nullptr;
    Device& d = devices_[bus];
    d.name = "cuda:" + std::to_string(device) + " (" + bus + ")";
    nvmlDevice_t handle = nullptr;
    nvmlReturn_t r = lib_.by_bus(bus.c_str(), &handle);
    if (r != kNvmlSuccess || handle == nullptr) {
      say_once(d, "no device with this PCI bus id (nvmlDeviceGetHandleByPciBusId_v2: " +
                      error_text(r) + "); no energy, power, clock or temperature readings for it");
      return nullptr;
    }
    d.handle = handle;
    d.counter = lib_.energy != nullptr;
    if (!d.counter)
      say_once(d, "no nvmlDeviceGetTotalEnergyConsumption; energy from power samples");
    d.power = lib_.power != nullptr;
    d.clock = lib_.clock != nullptr;
    d.temperature = lib_.temperature != nullptr;
    d.throttle = lib_.throttle != nullptr;
    return &d;
  }

  // One reading of every quantity still read on `d`; a call that fails turns its reading off for
  // the device (said once), except that the counter then hands over to power samples.
  template <class T, class Fn, class... Args>
  std::optional<T> ask(Device& d, bool& on, const char* what, const char* then, Fn fn,
                       Args... args) {
    if (!on) return std::nullopt;
    T value{};
    nvmlReturn_t r = fn(d.handle, args..., &value);
    if (r == kNvmlSuccess) return value;
    on = false;
    say_once(d, std::string(what) + ": " +
                    (r == kNvmlNotSupported ? std::string("not supported") : error_text(r)) + "; " +
                    then);
    return std::nullopt;
  }

  Sample read(Device& d) {
    Sample s;
    s.t = options_.clock();
    if (d.counter) {
      s.energy_mj = ask<unsigned long long>(d, d.counter, "nvmlDeviceGetTotalEnergyConsumption",
                                            "energy from power samples", lib_.energy);
    }
    if (auto mw = ask<unsigned>(d, d.power, "nvmlDeviceGetPowerUsage", kLeftOut, lib_.power)) {
      s.power_w = *mw / 1000.0;
    }
    s.sm_mhz =
        ask<unsigned>(d, d.clock, "nvmlDeviceGetClockInfo(SM)", kLeftOut, lib_.clock, kNvmlClockSm);
    s.temp_c = ask<unsigned>(d, d.temperature, "nvmlDeviceGetTemperature(GPU)", kLeftOut,
                             lib_.temperature, kNvmlTemperatureGpu);
    s.reasons =
        ask<unsigned long long>(d, d.throttle, "clocks throttle reasons", kLeftOut, lib_.throttle);
    return s;
  }

  void summarize(const Interval& interval, DeviceReadings& out) {
    Device& d = *interval.device;
    const std::vector<Sample>& ss = interval.samples;
    const Sample& first = ss.front();
    const Sample& last = ss.back();
    double seconds = last.t - first.t;
    bool bad_power = false;
    std::vector<std::pair<double, double>> power;  // (t, W)
    for (const Sample& s : ss) {
      if (!s.power_w) continue;
      if (*s.power_w > kMaxPowerW) {
        bad_power = true;
        continue;
      }
      power.emplace_back(s.t, *s.power_w);
    }
    if (bad_power) {
      say_once(d, "a power reading above 100 kW; power left out of that interval");
      power.clear();
    }
    if (first.energy_mj && last.energy_mj) {
      if (*last.energy_mj < *first.energy_mj) {
        say_once(d,
                 "the energy counter went backwards (" + std::to_string(*first.energy_mj) + " to " +
                     std::to_string(*last.energy_mj) + " mJ); energy left out of that interval",
                 "backwards");
      } else {
        out.energy_j = static_cast<double>(*last.energy_mj - *first.energy_mj) / 1000.0;
        out.energy_from = "counter";
      }
    } else if (!first.energy_mj && !last.energy_mj && power.size() >= 2) {
      double joules = 0;
      for (std::size_t i = 1; i < power.size(); ++i) {
        joules +=
            (power[i].first - power[i - 1].first) * (power[i].second + power[i - 1].second) / 2;
      }
      out.energy_j = joules;
      out.energy_from = "power_samples";
    }
    if (out.energy_j && seconds > 0) {
      out.power_w_mean = *out.energy_j / seconds;
    } else if (!power.empty()) {
      double sum = 0;
      for (const auto& p : power) sum += p.second;
      out.power_w_mean = sum / static_cast<double>(power.size());
    }
    bool any_reasons = false;
    unsigned long long reasons = 0;
    for (const Sample& s : ss) {
      if (s.sm_mhz && (!out.sm_clock_mhz_min || *s.sm_mhz < *out.sm_clock_mhz_min)) {
        out.sm_clock_mhz_min = *s.sm_mhz;
      }
      if (s.temp_c && (!out.temp_c_max || *s.temp_c > *out.temp_c_max)) out.temp_c_max = *s.temp_c;
      if (s.reasons) {
        any_reasons = true;
        reasons |= *s.reasons;
      }
    }
    if (any_reasons) {
      std::vector<std::string> names;
      for (const Reason& r : kReasons) {
        if ((reasons & r.bit) != 0) names.emplace_back(r.name);
      }
      out.throttle = std::move(names);
    }
  }

  // The sampler: every period, one reading of each device an open interval without a counter is
  // on, added to each such interval.
  void sample_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    auto period = std::chrono::duration<double>(options_.sample_period_s);
    while (!stopping_) {
      wake_.wait_for(lock, period, [this] { return stopping_; });
      if (stopping_) break;
      std::map<Device*, Sample> taken;
      for (auto& [id, interval] : open_) {
        Device* d = interval.device;
        if (d->counter) continue;
        auto it = taken.find(d);
        if (it == taken.end()) it = taken.emplace(d, read(*d)).first;
        interval.samples.push_back(it->second);
      }
    }
  }

  Library lib_;
  NvmlOptions options_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread sampler_;
  std::map<std::string, Device> devices_;  // by PCI bus id; handle nullptr: NVML cannot see it
  std::map<std::uint64_t, Interval> open_;
  std::uint64_t next_ = 1;
  std::set<std::string> said_;
};

void not_used(const NvmlOptions& options, const std::string& what) {
  say_to(options, "[Perf] NVML not used: " + what + "; no energy, power or clock readings");
}

}  // namespace

std::shared_ptr<DeviceMeter> make_nvml_meter(const NvmlOptions& options) {
  std::string error;
  void* handle = open_library(options.library_path, &error);
  if (handle == nullptr) {
    not_used(options, error);
    return nullptr;
  }
  Library lib;
  const char* missing = nullptr;
  if (!resolve(handle, lib.init, {"nvmlInit_v2"})) missing = "nvmlInit_v2";
  if (!missing && !resolve(handle, lib.shutdown, {"nvmlShutdown"})) missing = "nvmlShutdown";
  if (!missing && !resolve(handle, lib.by_bus, {"nvmlDeviceGetHandleByPciBusId_v2"})) {
    missing = "nvmlDeviceGetHandleByPciBusId_v2";
  }
  if (missing != nullptr) {
    not_used(options, options.library_path + " lacks " + missing);
    return nullptr;  // the handle stays: dlclose of a half-loaded driver library is not worth it
  }
  resolve(handle, lib.energy, {"nvmlDeviceGetTotalEnergyConsumption"});
  resolve(handle, lib.power, {"nvmlDeviceGetPowerUsage"});
  resolve(handle, lib.clock, {"nvmlDeviceGetClockInfo"});
  resolve(handle, lib.temperature, {"nvmlDeviceGetTemperature"});
  resolve(handle, lib.throttle,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  resolve(handle, lib.error_string, {"nvmlErrorString"});
  nvmlReturn_t r = lib.init();
  if (r != kNvmlSuccess) {
    std::string text = "nvmlInit_v2 failed: error " + std::to_string(r);
    if (lib.error_string != nullptr) {
      if (const char* s = lib.error_string(r)) text += " (" + std::string(s) + ")";
    }
    not_used(options, text);
    return nullptr;
  }
  return std::make_shared<NvmlMeter>(lib, options);
}

}  // namespace vxperf
