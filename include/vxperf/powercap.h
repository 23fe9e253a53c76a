// The powercap meter: the host's CPU package and DRAM energy over an interval (a request, a
// training window), from the Linux kernel's powercap counters: the RAPL zones under
// /sys/class/powercap (`intel-rapl:N` and their `dram` subzones; `energy_uj`, a counter that wraps
// at `max_energy_range_uj`). Plain files read with the C library: no driver, no library.
//
//   vxperf::PowercapOptions options;               // default root /sys/class/powercap
//   if (auto host = vxperf::make_powercap_meter(options)) engine_options.host_meter = host;
//
// The engine makes one itself (VIDEOX_PERF_POWERCAP, on by default) beside the NVML meter, the
// first time it reads a request or window on a device whose backend names its PCI bus id, so that
// records measured on a GPU also carry cpu_energy_j.
//
// It is a DeviceMeter whose readings are `cpu_energy_j` whatever device an interval is on: the
// host is one counter, the sum of its zones, and intervals open at once (requests on two GPUs, an
// eval request during training) share it by the time share, as a device's energy is shared
// (vxperf/nvml.h). Counted: each package zone ("package-N") and each "dram" zone; not "core",
// "uncore" (parts of a package), "psys" (the whole platform, overlapping the rest) or the
// `intel-rapl-mmio` interface (the same packages again).
//
// Reading: every zone at each boundary (an interval's begin and end, a training step's close),
// each zone's gain since the previous reading accumulated across a wrap: a value below the last
// one is a wrap when what it implies is plausible (at most 2 kW of the zone since that reading),
// else the counter went backwards.
//
// Bad readings: no zone (the host has no RAPL, or not this interface), a zone whose energy_uj
// cannot be read (powercap is root-only on most kernels since 5.10): no meter, one notice; a zone
// that fails or goes backwards later: cpu_energy_j left out of the intervals it spans, one notice
// per zone and reason. Nothing is ever thrown into the program.
//
// Thread safety: every member may be called from any thread at once (one lock).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "vxperf/device.h"

namespace vxperf {

struct PowercapOptions {
  // The powercap tree. Tests point it at a fake one.
  std::string root = "/sys/class/powercap";
  // Where one-line notices go. Empty: stderr.
  std::function<void(std::string_view)> notice;
  // The meter's clock in seconds (for wraps). Empty: a steady clock.
  std::function<double()> clock;
};

// The meter, or nullptr after a one-line notice when no package or DRAM zone can be read.
std::shared_ptr<DeviceMeter> make_powercap_meter(const PowercapOptions& options = {});

}  // namespace vxperf
