// The NVML device meter: energy, power, SM clock, temperature and throttle reasons of an interval
// (a request, a training window) on an NVIDIA GPU, without a link-time dependency on NVIDIA's
// libraries. libnvidia-ml.so.1 is loaded with dlopen when the meter is made; no NVIDIA header is
// included here or in the library.
//
//   vxperf::NvmlOptions options;                  // defaults: libnvidia-ml.so.1, notices to stderr
//   if (auto meter = vxperf::make_nvml_meter(options)) engine_options.meter = meter;
//
// The engine makes one itself (VIDEOX_PERF_NVML, on by default) the first time it reads a
// request or window on a device whose backend names its PCI bus id (the CUDA backend, from
// cuDeviceGetPCIBusId). A device is found in NVML by that bus id, never by ordinal: under
// CUDA_VISIBLE_DEVICES the two differ.
//
// Entry points: nvmlInit_v2, nvmlShutdown and nvmlDeviceGetHandleByPciBusId_v2 are required (a
// library without them is not NVML: no meter, one notice); nvmlDeviceGetTotalEnergyConsumption
// (millijoules), nvmlDeviceGetPowerUsage (milliwatts), nvmlDeviceGetClockInfo (NVML_CLOCK_SM, MHz),
// nvmlDeviceGetTemperature (NVML_TEMPERATURE_GPU, °C) and nvmlDeviceGetCurrentClocksThrottleReasons
// (or nvmlDeviceGetCurrentClocksEventReasons, its newer name) are each optional: one that is
// missing or says NOT_SUPPORTED leaves its reading out, said once per device; nvmlErrorString
// is used for messages when present.
//
// What an interval gets (vxperf/device.h, DeviceReadings), read at its boundaries (a window's
// step closes too: mark) and never on a stage's hot path:
//   energy_j        the energy counter's difference (energy_from "counter"); on a device without
//                   the counter, power samples integrated over time by the trapezoid rule
//                   (energy_from "power_samples"): the boundaries' two, and the sampler's between;
//                   over an interval during which the counter did not move and no longer than
//                   max(1 s, twice its update period as seen: the longest it was read holding one
//                   value before moving), the power read times the time (energy_from
//                   "power_x_time"); longer, the counter stalled (left out, said once)
//   energy_shared   the time share: what the device used between two consecutive readings (any
//                   interval's boundary) is split equally among the intervals open on it then, so
//                   that overlapping intervals add up to the counter over their union; true when
//                   another interval was open for part of this one
//   power_w_mean    energy_j over the interval's seconds (without energy: the samples' mean)
//   sm_clock_mhz_min, temp_c_max   the lowest SM clock and the highest temperature read
//   throttle        the clock-limiting reasons read, by name in the order of their NVML bits
//                   ("applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
//                   "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
//                   "display_clock_setting"; "gpu_idle" is left out: an idle GPU is not slowed)
// The sampler is one thread per meter at `sample_period_s`, started before the first reading of
// the first interval on a device without an energy counter (outside that interval), reading the
// open intervals' devices.
//
// Bad readings: a counter that went backwards (a driver reload, a wrap), a power reading above
// 100 kW: that interval's energy is left out, with one notice per device and reason. Nothing is
// ever thrown into the program.
//
// Thread safety: every member may be called from any thread at once (one lock, held across the
// NVML calls of a boundary).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "vxperf/device.h"

namespace vxperf {

struct NvmlOptions {
  // The library dlopen loads. Tests point it at the fake NVML.
  std::string library_path = "libnvidia-ml.so.1";
  // Where one-line notices go (library absent, a device NVML cannot see, a bad reading). Empty:
  // stderr.
  std::function<void(std::string_view)> notice;
  // Seconds between the sampler's readings where a device has no energy counter; 0: none (the
  // boundaries' readings alone).
  double sample_period_s = 0.1;
  // The meter's clock in seconds (power integration and means). Empty: a steady clock.
  std::function<double()> clock;
};

// The meter, or nullptr after a one-line notice when the library, one of its required entry points
// or nvmlInit_v2 fails.
std::shared_ptr<DeviceMeter> make_nvml_meter(const NvmlOptions& options = {});

}  // namespace vxperf
