// A fake libnvidia-ml.so.1 for the NVML meter's tests: the entry points the meter resolves, with
// every reading scripted through a control API (fake_nvml_*), so that energy, power, clocks,
// temperature and throttling are known exactly. Each scripted reading is a queue: a call takes the
// front value, and the last value stays once it is the only one left. Any entry point can be made
// to return a given code (NOT_SUPPORTED, ...). Devices are found by PCI bus id only
// (case-insensitive), as NVML finds them for the meter.
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using Return = int;
constexpr Return kSuccess = 0;
constexpr Return kUninitialized = 1;
constexpr Return kInvalidArgument = 2;
constexpr Return kNotFound = 6;

enum Call {
  kInit,
  kShutdown,
  kHandleByBus,
  kEnergy,
  kPower,
  kClock,
  kTemperature,
  kThrottle,
  kPowerLimit,
  kCallCount
};
const char* const kCallNames[kCallCount] = {"nvmlInit_v2",
                                            "nvmlShutdown",
                                            "nvmlDeviceGetHandleByPciBusId_v2",
                                            "nvmlDeviceGetTotalEnergyConsumption",
                                            "nvmlDeviceGetPowerUsage",
                                            "nvmlDeviceGetClockInfo",
                                            "nvmlDeviceGetTemperature",
                                            "nvmlDeviceGetCurrentClocksThrottleReasons",
                                            "nvmlDeviceGetEnforcedPowerLimit"};

struct Device {
  std::string bus;
  std::deque<unsigned long long> energy_mj{0};
  std::deque<unsigned> power_mw{0};
  std::deque<unsigned> sm_mhz{0};
  std::deque<unsigned> temp_c{0};
  std::deque<unsigned long long> reasons{0};
  // A device drawing `watts` (fake_nvml_draw): its counter and power follow the fake's time
  // instead of the scripts; the counter moves every `period_s` (0: at every reading).
  double watts = -1;
  double period_s = 0;
  double base_mj = 0;  // the counter at time 0
  unsigned limit_mw = 0;  // the enforced power limit (fake_nvml_set_power_limit); 0: not supported
};

struct State {
  std::mutex mu;
  int inits = 0;  // nvmlInit_v2 minus nvmlShutdown
  Return results[kCallCount] = {};
  long calls[kCallCount] = {};
  std::vector<Device> devices;  // nvmlDevice_t is the index + 1
  double time_s = 0;            // the fake's time (fake_nvml_set_time), for drawing devices
  bool wall_clock = false;      // the fake's time is the wall clock's (fake_nvml_follow_clock)
};

// The fake's time now: as set, or the wall clock's seconds since the epoch.
double now_s(const State& s) {
  if (!s.wall_clock) return s.time_s;
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

State& state() {
  static State s;
  return s;
}

template <class T>
T take(std::deque<T>& q) {
  T v = q.front();
  if (q.size() > 1) q.pop_front();
  return v;
}

[[maybe_unused]] std::string lower(const char* s) {
  std::string out;
  for (; *s != '\0'; ++s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(*s)));
  return out;
}

Device* device_of(State& s, void* handle) {
  auto i = reinterpret_cast<std::uintptr_t>(handle);
  if (i == 0 || i > s.devices.size()) return nullptr;
  return &s.devices[i - 1];
}

}  // namespace

#define FAKE_ENTER(call)                  \
  State& s = state();                     \
  std::lock_guard<std::mutex> lock(s.mu); \
  ++s.calls[call];                        \
  if (s.results[call] != kSuccess) return s.results[call]

#define FAKE_DEVICE(call)                  \
  FAKE_ENTER(call);                        \
  if (s.inits <= 0) return kUninitialized; \
  Device* d = device_of(s, device);        \
  if (d == nullptr || out == nullptr) return kInvalidArgument

FAKE_EXPORT Return nvmlInit_v2() {
  FAKE_ENTER(kInit);
  ++s.inits;
  return kSuccess;
}

FAKE_EXPORT Return nvmlShutdown() {
  FAKE_ENTER(kShutdown);
  if (s.inits <= 0) return kUninitialized;
  --s.inits;
  return kSuccess;
}

#ifndef FAKE_NVML_NO_HANDLE_BY_BUS
FAKE_EXPORT Return nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** device) {
  FAKE_ENTER(kHandleByBus);
  if (s.inits <= 0) return kUninitialized;
  if (bus == nullptr || device == nullptr) return kInvalidArgument;
  std::string want = lower(bus);
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    if (lower(s.devices[i].bus.c_str()) == want) {
      *device = reinterpret_cast<void*>(static_cast<std::uintptr_t>(i + 1));
      return kSuccess;
    }
  }
  return kNotFound;
}
#endif

#ifndef FAKE_NVML_NO_ENERGY
FAKE_EXPORT Return nvmlDeviceGetTotalEnergyConsumption(void* device, unsigned long long* out) {
  FAKE_DEVICE(kEnergy);
  if (d->watts >= 0) {
    double now = now_s(s);
    double t = d->period_s > 0 ? std::floor(now / d->period_s + 1e-9) * d->period_s : now;
    *out = static_cast<unsigned long long>(std::llround(d->base_mj + t * d->watts * 1000.0));
    return kSuccess;
  }
  *out = take(d->energy_mj);
  return kSuccess;
}
#endif

FAKE_EXPORT Return nvmlDeviceGetPowerUsage(void* device, unsigned* out) {
  FAKE_DEVICE(kPower);
  if (d->watts >= 0) {
    *out = static_cast<unsigned>(std::llround(d->watts * 1000.0));
    return kSuccess;
  }
  *out = take(d->power_mw);
  return kSuccess;
}

FAKE_EXPORT Return nvmlDeviceGetEnforcedPowerLimit(void* device, unsigned* out) {
  FAKE_DEVICE(kPowerLimit);
  if (d->limit_mw == 0) return 3;  // NOT_SUPPORTED
  *out = d->limit_mw;
  return kSuccess;
}

FAKE_EXPORT Return nvmlDeviceGetClockInfo(void* device, int type, unsigned* out) {
  FAKE_DEVICE(kClock);
  if (type != 1) return kInvalidArgument;  // the meter asks for the SM clock only
  *out = take(d->sm_mhz);
  return kSuccess;
}

FAKE_EXPORT Return nvmlDeviceGetTemperature(void* device, int sensor, unsigned* out) {
  FAKE_DEVICE(kTemperature);
  if (sensor != 0) return kInvalidArgument;  // the GPU die
  *out = take(d->temp_c);
  return kSuccess;
}

FAKE_EXPORT Return nvmlDeviceGetCurrentClocksThrottleReasons(void* device,
                                                             unsigned long long* out) {
  FAKE_DEVICE(kThrottle);
  *out = take(d->reasons);
  return kSuccess;
}

FAKE_EXPORT const char* nvmlErrorString(Return r) {
  switch (r) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 6:
      return "Not Found";
    case 9:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

// ---- control -------------------------------------------------------------------------------

#define FAKE_CONTROL() \
  State& s = state();  \
  std::lock_guard<std::mutex> lock(s.mu)

// No devices, every call succeeding, all counters zero, not initialized.
FAKE_EXPORT void fake_nvml_reset() {
  FAKE_CONTROL();
  s.inits = 0;
  s.devices.clear();
  s.time_s = 0;
  for (int i = 0; i < kCallCount; ++i) s.results[i] = kSuccess, s.calls[i] = 0;
}
// Adds a device found by `bus`; returns its index for the setters below. Its readings start at 0.
FAKE_EXPORT int fake_nvml_add_device(const char* bus) {
  FAKE_CONTROL();
  Device d;
  d.bus = bus;
  s.devices.push_back(d);
  return static_cast<int>(s.devices.size()) - 1;
}
#define FAKE_SCRIPT(name, member, type)                                               \
  FAKE_EXPORT void name(int device, const type* values, int n) {                      \
    FAKE_CONTROL();                                                                   \
    if (device < 0 || device >= static_cast<int>(s.devices.size()) || n <= 0) return; \
    auto& q = s.devices[device].member;                                               \
    q.assign(values, values + n);                                                     \
  }
// The values successive calls return for `device` (the last one stays).
FAKE_SCRIPT(fake_nvml_script_energy_mj, energy_mj, unsigned long long)
FAKE_SCRIPT(fake_nvml_script_power_mw, power_mw, unsigned)
FAKE_SCRIPT(fake_nvml_script_sm_mhz, sm_mhz, unsigned)
FAKE_SCRIPT(fake_nvml_script_temp_c, temp_c, unsigned)
FAKE_SCRIPT(fake_nvml_script_reasons, reasons, unsigned long long)
// Makes `device` draw `watts` from now on: its power reads `watts` and its energy counter reads
// `base_mj` plus what it drew up to the fake's time, moving every `period_s` seconds (0: always).
FAKE_EXPORT void fake_nvml_draw(int device, double watts, double period_s, double base_mj) {
  FAKE_CONTROL();
  if (device < 0 || device >= static_cast<int>(s.devices.size())) return;
  Device& d = s.devices[device];
  d.watts = watts;
  d.period_s = period_s;
  d.base_mj = base_mj;
}
// The enforced power limit `device` reports, in milliwatts (0: not supported, the default).
FAKE_EXPORT void fake_nvml_set_power_limit(int device, unsigned milliwatts) {
  FAKE_CONTROL();
  if (device < 0 || device >= static_cast<int>(s.devices.size())) return;
  s.devices[device].limit_mw = milliwatts;
}
// The fake's time in seconds (what drawing devices have drawn up to); tests keep it at their
// clock's.
FAKE_EXPORT void fake_nvml_set_time(double seconds) {
  FAKE_CONTROL();
  s.time_s = seconds;
}
// The fake's time follows the wall clock (seconds since the epoch) from now on (on != 0), as a
// real counter does, so that another program (the GPU check's rehearsal of nvidia-smi) can read
// the same counter from the same model; or is set by fake_nvml_set_time again (0).
FAKE_EXPORT void fake_nvml_follow_clock(int on) {
  FAKE_CONTROL();
  s.wall_clock = on != 0;
}
// Makes the entry point `name` return `code` (0: success again).
FAKE_EXPORT void fake_nvml_set_result(const char* name, int code) {
  FAKE_CONTROL();
  for (int i = 0; i < kCallCount; ++i) {
    if (std::string(kCallNames[i]) == name) s.results[i] = code;
  }
}
// Calls made to the entry point `name` since the last reset.
FAKE_EXPORT long fake_nvml_calls(const char* name) {
  FAKE_CONTROL();
  for (int i = 0; i < kCallCount; ++i) {
    if (std::string(kCallNames[i]) == name) return s.calls[i];
  }
  return -1;
}
// nvmlInit_v2 calls not yet shut down.
FAKE_EXPORT int fake_nvml_open() {
  FAKE_CONTROL();
  return s.inits;
}
