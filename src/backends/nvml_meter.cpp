// The NVML meter (vxperf/nvml.h): libnvidia-ml.so.1 through dlopen, the few entry points it uses
// declared here from NVML's documented C API (no NVIDIA header).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/energy_shares.h"
#include "backends/shared_library.h"
#include "base/strings.h"
#include "vxperf/nvml.h"

namespace vxperf {
namespace {

// ---- NVML's C API, as documented ------------------------------------------------------------
using internal::strprintf;
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
using nvmlDeviceGetEnforcedPowerLimit_t = nvmlReturn_t (*)(nvmlDevice_t, unsigned*);
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
// An NVML counter holding one value longer than this (and than twice the longest hold seen before
// it moved) has stalled; shorter, the interval was shorter than its update period.
constexpr double kStillS = 1.0;
// Over fewer of the counter's update periods than this, its difference is mostly the steps that
// happened to fall inside (a 30 ms request spanning one 100 ms step of a 250 W device would take
// 25 J, 833 W): the power read times the time stands in, as where the counter did not move.
constexpr double kCounterPeriods = 3.0;
// A hold seen shorter than this says nothing of the update period (no counter updates faster).
constexpr double kMinUpdateS = 0.001;

struct Library {
  nvmlInit_v2_t init = nullptr;
  nvmlShutdown_t shutdown = nullptr;
  nvmlDeviceGetHandleByPciBusId_v2_t by_bus = nullptr;
  nvmlDeviceGetTotalEnergyConsumption_t energy = nullptr;
  nvmlDeviceGetPowerUsage_t power = nullptr;
  nvmlDeviceGetEnforcedPowerLimit_t power_limit = nullptr;  // optional: the cap on any interval
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
    // Before the first reading: starting the thread is not the interval's.
    start_sampler(*d);
    Sample s = take(*d);
    if (start_sampler(*d)) {
      // The counter failed just now (NOT_SUPPORTED is only learned by asking): the interval
      // starts once the sampler runs.
      s.t = options_.clock();
      d->last->t = s.t;
    }
    return open_at(*d, s);
  }

  void prepare(const std::string& pci_bus_id, int device) override {
    std::lock_guard<std::mutex> lock(mu_);
    Device* d = device_for(pci_bus_id, device);
    if (d == nullptr) return;
    // One reading, charged to no interval (none is open on it, or it gets its share as any
    // reading's): it learns whether the counter is supported, so that the sampler starts now.
    take(*d, true);
    start_sampler(*d);
  }

  void end(std::uint64_t id, DeviceReadings& readings) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_.find(id);
    if (it == open_.end()) return;
    close(it, take(*it->second.device), readings);
  }

  void cancel(std::uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_.find(id);
    if (it == open_.end()) return;
    it->second.device->shares.close(id);
    open_.erase(it);
  }

  void mark(std::uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_.find(id);
    if (it == open_.end()) return;
    Interval& interval = it->second;
    // A step's close: the energy (and power) alone, one or two calls; the clocks, temperature and
    // throttle reasons are read at the window's boundaries.
    interval.samples.push_back(take(*interval.device, true));
    interval.mark = Mark{interval.samples.size(), *interval.device->shares.peek(id)};
  }

  void end_at_mark(std::uint64_t id, DeviceReadings& readings) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_.find(id);
    if (it == open_.end()) return;
    Interval& interval = it->second;
    if (!interval.mark) {
      close(it, take(*interval.device), readings);
      return;
    }
    // What its time since the mark was given goes to no one (the others' shares are kept).
    interval.device->shares.close(id);
    interval.samples.resize(interval.mark->samples);
    summarize(interval, interval.mark->share, readings);
    open_.erase(it);
  }

  std::uint64_t roll(std::uint64_t id, DeviceReadings& readings, const std::string&, int) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_.find(id);
    if (it == open_.end()) return 0;
    Device& d = *it->second.device;
    Sample s = take(d);
    close(it, s, readings);
    return open_at(d, s);
  }

 private:
  struct Device {
    nvmlDevice_t handle = nullptr;
    std::string name;     // "cuda:0 (0000:1B:00.0)", for messages
    bool counter = true;  // the energy counter is read (false: power samples stand in)
    bool power = true, clock = true, temperature = true, throttle = true;
    // The time share of what the device used among its open intervals, from its latest reading.
    internal::EnergyShares shares;
    std::optional<Sample> last;
    // The counter's update period as seen: the longest it was read holding one value before it
    // moved (`held_since`: when the value now held was first read).
    double update_s = 0;
    double held_since = 0;
    std::optional<double> limit_w;  // the enforced power limit, where NVML says it
  };
  struct Mark {
    std::size_t samples = 0;  // the interval's samples up to the mark
    internal::EnergyShares::Share share;
  };
  struct Interval {
    Device* device = nullptr;
    std::vector<Sample> samples;  // in time order: the begin, the sampler's, marks', the end
    std::optional<Mark> mark;
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
    unsigned limit_mw = 0;
    if (lib_.power_limit != nullptr && lib_.power_limit(handle, &limit_mw) == kNvmlSuccess &&
        limit_mw > 0) {
      d.limit_w = limit_mw / 1000.0;
    }
    return &d;
  }

  // Whether it started the sampler now.
  bool start_sampler(const Device& d) {
    if (d.counter || options_.sample_period_s <= 0 || sampler_.joinable()) return false;
    sampler_ = std::thread([this] { sample_loop(); });
    return true;
  }

  // A new interval on `d` from its reading `s`.
  std::uint64_t open_at(Device& d, const Sample& s) {
    std::uint64_t id = next_++;
    Interval interval;
    interval.device = &d;
    interval.samples.push_back(s);
    d.shares.open(id);
    open_.emplace(id, std::move(interval));
    return id;
  }

  // Closes the interval at `it` with its last reading `s`.
  void close(std::map<std::uint64_t, Interval>::iterator it, const Sample& s,
             DeviceReadings& readings) {
    Interval& interval = it->second;
    interval.samples.push_back(s);
    std::optional<internal::EnergyShares::Share> share = interval.device->shares.close(it->first);
    if (share) summarize(interval, *share, readings);
    open_.erase(it);
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

  // `light`: the energy counter and the power alone.
  Sample read(Device& d, bool light) {
    Sample s;
    s.t = options_.clock();
    if (d.counter) {
      s.energy_mj = ask<unsigned long long>(d, d.counter, "nvmlDeviceGetTotalEnergyConsumption",
                                            "energy from power samples", lib_.energy);
    }
    if (auto mw = ask<unsigned>(d, d.power, "nvmlDeviceGetPowerUsage", kLeftOut, lib_.power)) {
      s.power_w = *mw / 1000.0;
    }
    if (light) return s;
    s.sm_mhz =
        ask<unsigned>(d, d.clock, "nvmlDeviceGetClockInfo(SM)", kLeftOut, lib_.clock, kNvmlClockSm);
    s.temp_c = ask<unsigned>(d, d.temperature, "nvmlDeviceGetTemperature(GPU)", kLeftOut,
                             lib_.temperature, kNvmlTemperatureGpu);
    s.reasons =
        ask<unsigned long long>(d, d.throttle, "clocks throttle reasons", kLeftOut, lib_.throttle);
    return s;
  }

  // A reading of `d`, its gain since the previous one shared among the intervals open on it.
  Sample take(Device& d, bool light = false) {
    Sample s = read(d, light);
    if (d.last) {
      const Sample& p = *d.last;
      double dt = std::max(0.0, s.t - p.t);
      std::optional<double> gain;
      auto source = internal::EnergyShares::Source::kCounter;
      if (p.energy_mj && s.energy_mj) {
        if (*s.energy_mj < *p.energy_mj) {
          if (d.shares.open_count() > 0) {
            say_once(d,
                     "the energy counter went backwards (" + std::to_string(*p.energy_mj) + " to " +
                         std::to_string(*s.energy_mj) + " mJ); energy left out of that interval",
                     "backwards");
          }
        } else {
          gain = static_cast<double>(*s.energy_mj - *p.energy_mj) / 1000.0;
        }
        if (*s.energy_mj != *p.energy_mj) {
          // A hold past the stall limit was a stall, not the update period.
          double held = p.t - d.held_since;
          if (held <= std::max(kStillS, 2 * d.update_s)) d.update_s = std::max(d.update_s, held);
          d.held_since = s.t;
        }
      } else {
        // Power samples, by the trapezoid rule.
        source = internal::EnergyShares::Source::kPower;
        auto usable = [](const std::optional<double>& w) { return w && *w <= kMaxPowerW; };
        if (usable(p.power_w) && usable(s.power_w)) gain = dt * (*p.power_w + *s.power_w) / 2;
      }
      d.shares.advance(dt, gain, source);
    } else {
      d.held_since = s.t;
    }
    d.last = s;
    return s;
  }

  void summarize(const Interval& interval, const internal::EnergyShares::Share& share,
                 DeviceReadings& out) {
    Device& d = *interval.device;
    const std::vector<Sample>& ss = interval.samples;
    const Sample& first = ss.front();
    const Sample& last = ss.back();
    double seconds = last.t - first.t;
    bool bad_power = false;
    std::vector<double> power;  // W
    for (const Sample& s : ss) {
      if (!s.power_w) continue;
      if (*s.power_w > kMaxPowerW) {
        bad_power = true;
        continue;
      }
      power.push_back(*s.power_w);
    }
    if (bad_power) {
      say_once(d, "a power reading above 100 kW; power left out of that interval");
      power.clear();
    }
    double power_mean = 0;
    for (double w : power) power_mean += w / static_cast<double>(power.size());
    // One source throughout: an interval over which the counter failed has no energy.
    if (!share.spoiled && share.counter != share.power) {
      if (share.power) {
        out.energy_j = share.energy_j;
        out.energy_from = "power_samples";
      } else if (first.energy_mj && last.energy_mj && *first.energy_mj == *last.energy_mj) {
        // The counter did not move: an interval shorter than its update period, or a stall.
        double limit = std::max(kStillS, 2 * d.update_s);
        if (seconds > limit) {
          say_once(d,
                   strprintf("the energy counter did not move over %.3f s (its update period "
                             "seen: %.3f s); energy left out of that interval",
                             seconds, d.update_s),
                   "stalled");
        } else if (!power.empty()) {
          out.energy_j = power_mean * share.share_s;
          out.energy_from = "power_x_time";
        } else {
          say_once(d,
                   "an interval shorter than the energy counter's update period and no power "
                   "reading to estimate it; energy left out of that interval",
                   "short");
        }
      } else if (d.update_s >= kMinUpdateS && seconds < kCounterPeriods * d.update_s &&
                 !power.empty()) {
        out.energy_j = power_mean * share.share_s;
        out.energy_from = "power_x_time";
      } else {
        out.energy_j = share.energy_j;
        out.energy_from = "counter";
      }
    }
    // No interval draws more than the device may: the enforced power limit over its time.
    if (out.energy_j && d.limit_w && *out.energy_j > *d.limit_w * share.share_s) {
      say_once(d,
               strprintf("an interval's energy above the enforced power limit (%.0f W) over its "
                         "time; capped at it",
                         *d.limit_w),
               "limit");
      out.energy_j = *d.limit_w * share.share_s;
    }
    if (out.energy_j) out.energy_shared = share.shared;
    if (out.energy_j && seconds > 0) {
      out.power_w_mean = *out.energy_j / seconds;
    } else if (!power.empty()) {
      out.power_w_mean = power_mean;
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

  // The sampler: every period, one reading of each device without a counter that an interval is
  // open on, added to each such interval.
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
        if (it == taken.end()) it = taken.emplace(d, take(*d)).first;
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

}  // namespace

std::shared_ptr<DeviceMeter> make_nvml_meter(const NvmlOptions& options) {
  const NotUsed not_used(options.notice, "NVML", "no energy, power or clock readings");
  void* handle = open_library(options.library_path, not_used);
  if (handle == nullptr) return nullptr;
  Library lib;
  const char* missing = nullptr;
  if (!resolve(handle, lib.init, {"nvmlInit_v2"})) missing = "nvmlInit_v2";
  if (!missing && !resolve(handle, lib.shutdown, {"nvmlShutdown"})) missing = "nvmlShutdown";
  if (!missing && !resolve(handle, lib.by_bus, {"nvmlDeviceGetHandleByPciBusId_v2"})) {
    missing = "nvmlDeviceGetHandleByPciBusId_v2";
  }
  if (missing != nullptr) {
    not_used(options.library_path + " lacks " + missing);
    return nullptr;  // the handle stays: dlclose of a half-loaded driver library is not worth it
  }
  resolve(handle, lib.energy, {"nvmlDeviceGetTotalEnergyConsumption"});
  resolve(handle, lib.power, {"nvmlDeviceGetPowerUsage"});
  resolve(handle, lib.power_limit, {"nvmlDeviceGetEnforcedPowerLimit"});
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
    not_used(text);
    return nullptr;
  }
  return std::make_shared<NvmlMeter>(lib, options);
}

}  // namespace vxperf
