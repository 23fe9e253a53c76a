// The CUDA device backend: device-accurate stage timing on NVIDIA GPUs without a link-time CUDA
// dependency. libcuda.so.1 is loaded with dlopen when the backend is made, so one build runs on
// hosts with and without a GPU; no CUDA header is included here or in the library.
//
//   vxperf::CudaOptions options;                    // defaults: libcuda.so.1, notices to stderr
//   options.memory_peaks = ...;                     // the LibTorch adapter: caching allocator
//   options.reset_memory_peaks = ...;
//   if (auto cuda = vxperf::make_cuda_backend(options)) engine.set_device_backend(cuda);
//
// What it does per marker: takes an event from a per-device pool (created with timing enabled
// only when the pool is empty, reused after release), makes the device's primary context current
// for the call if it is not already (and restores the caller's), and records the event on the
// stream the caller names (nullptr: the legacy default stream). Completion is polled with
// cuEventQuery; elapsed time is read only once both events are complete. synchronize() is one
// cuCtxSynchronize with the given device's primary context current. No call ever names a device
// other than the one it is given: device 0 is touched only when it is the device in use.
//
// Memory: with `memory_peaks` set, peaks come from that provider (the allocator in use). Without
// it, cuMemGetInfo (total - free) is sampled at every marker and at each reset, and the maximum
// since the last reset is reported as both allocated and reserved. That is an approximation: it
// counts every allocation on the device (other processes, the CUDA context itself, allocator
// caches) and misses peaks between markers.
//
// Errors: a driver error after the backend was made is reported once through `notice`; from then
// on the backend is host-only in effect (available() stays true, record() returns kNoEvent, the
// engine falls back to host time) and makes no further driver calls.
//
// Thread safety: every member may be called from any thread at once. The pools are guarded by a
// short lock; driver calls are made outside it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "vxperf/device.h"

namespace vxperf {

struct CudaOptions {
  // The driver library dlopen loads. Tests point it at the fake driver.
  std::string library_path = "libcuda.so.1";
  // Peak allocated/reserved bytes on `device` since the last reset, from the allocator in use
  // (the LibTorch adapter supplies the caching allocator's counters). Empty: sampled from the
  // driver at markers (see above).
  std::function<std::optional<DeviceReadings>(int device)> memory_peaks;
  // Resets the provider's peak counters for `device`; called with the provider above.
  std::function<void(int device)> reset_memory_peaks;
  // Where one-line notices go (library or device absent, a driver error). Empty: stderr.
  std::function<void(std::string_view)> notice;
};

// The CUDA backend, or nullptr after a one-line notice when the driver library, one of its entry
// points or a device is absent (the caller then stays on host-only timing).
std::shared_ptr<DeviceBackend> make_cuda_backend(const CudaOptions& options = {});

}  // namespace vxperf
