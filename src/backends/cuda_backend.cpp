#include "vxperf/cuda_backend.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda_driver.h"
#include "backends/shared_library.h"

namespace vxperf {
namespace {

using namespace cuda;  // NOLINT(google-build-using-namespace): the driver's names, local to here

struct Driver {
  cuInit_t init = nullptr;
  cuDeviceGetCount_t device_get_count = nullptr;
  cuDeviceGet_t device_get = nullptr;
  cuDeviceGetName_t device_get_name = nullptr;
  cuDevicePrimaryCtxRetain_t primary_ctx_retain = nullptr;
  cuDevicePrimaryCtxRelease_v2_t primary_ctx_release = nullptr;
  cuCtxGetCurrent_t ctx_get_current = nullptr;
  cuCtxPushCurrent_v2_t ctx_push = nullptr;
  cuCtxPopCurrent_v2_t ctx_pop = nullptr;
  cuCtxSynchronize_t ctx_synchronize = nullptr;
  cuEventCreate_t event_create = nullptr;
  cuEventRecord_t event_record = nullptr;
  cuEventQuery_t event_query = nullptr;
  cuEventElapsedTime_t event_elapsed = nullptr;
  cuEventDestroy_v2_t event_destroy = nullptr;
  cuMemGetInfo_v2_t mem_get_info = nullptr;
  cuGetErrorName_t get_error_name = nullptr;              // optional: only for messages
  cuDeviceGetPCIBusId_t device_get_pci_bus_id = nullptr;  // optional: only for NVML readings
  cuProfilerStart_t profiler_start = nullptr;             // optional: only for VIDEOX_PERF_PROFILE
  cuProfilerStop_t profiler_stop = nullptr;
};

class CudaBackend final : public DeviceBackend {
 public:
  CudaBackend(const Driver& driver, int device_count, CudaOptions options)
      : driver_(driver), options_(std::move(options)) {
    devices_.reserve(static_cast<std::size_t>(device_count));
    for (int i = 0; i < device_count; ++i) devices_.push_back(std::make_unique<Device>());
  }

  ~CudaBackend() override {
    // Errors are ignored here: at process exit the driver may already be shutting down. The
    // library itself stays loaded (unloading an initialized driver is not safe).
    if (failed_.load()) return;
    for (const Slot& slot : slots_) driver_.event_destroy(slot.event);
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i]->ctx.load() != nullptr) {
        driver_.primary_ctx_release(devices_[i]->handle);
      }
    }
  }

  std::string kind() const override { return "cuda"; }
  bool available() const override { return true; }

  std::string device_name(int device) override {
    Device* d = lookup(device);
    if (d == nullptr) return {};
    std::lock_guard<std::mutex> lock(d->init_mu);
    if (!d->name_known) {
      if (!ensure_handle(*d, device)) return {};
      char buf[256] = {};
      CUresult r = driver_.device_get_name(buf, static_cast<int>(sizeof buf), d->handle);
      if (r != kSuccess) {
        fail("cuDeviceGetName", r);
        return {};
      }
      d->name = buf;
      d->name_known = true;
    }
    return d->name;
  }

  // Asked only where a meter is on (VIDEOX_PERF_NVML, VIDEOX_PERF_POWERCAP), at interval
  // boundaries: a driver that cannot say leaves the device unmetered (said once) and its timing
  // as it is.
  std::string pci_bus_id(int device) override {
    Device* d = lookup(device);
    if (d == nullptr) return {};
    std::lock_guard<std::mutex> lock(d->init_mu);
    if (!d->bus_known) {
      d->bus_known = true;
      if (driver_.device_get_pci_bus_id == nullptr) {
        if (!bus_reported_.exchange(true)) {
          say("[Perf] CUDA backend: " + options_.library_path +
              " lacks cuDeviceGetPCIBusId; no NVML readings");
        }
        return {};
      }
      if (!ensure_handle(*d, device)) return {};
      char buf[64] = {};
      CUresult r = driver_.device_get_pci_bus_id(buf, static_cast<int>(sizeof buf), d->handle);
      if (r != kSuccess) {
        say("[Perf] CUDA backend: cuDeviceGetPCIBusId failed for cuda:" + std::to_string(device) +
            ": " + error_text(r) + "; no NVML readings for it");
        return {};
      }
      buf[sizeof buf - 1] = '\0';
      d->bus = buf;
    }
    return d->bus;
  }

  // VIDEOX_PERF_PROFILE's range, with the device's context current. A failure is said once and
  // leaves timing as it is: the capture is not the measurement.
  bool profiler_start(int device) override {
    return profiler_call(device, driver_.profiler_start, "cuProfilerStart");
  }
  bool profiler_stop(int device) override {
    return profiler_call(device, driver_.profiler_stop, "cuProfilerStop");
  }

  EventId record(int device, void* stream) override {
    if (failed_.load(std::memory_order_relaxed)) return kNoEvent;
    Device* d = lookup(device);
    if (d == nullptr) return kNoEvent;
    CUcontext ctx = context(*d, device);
    if (ctx == nullptr) return kNoEvent;

    EventId id = kNoEvent;
    CUevent event = nullptr;
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      if (!d->free.empty()) {
        id = d->free.back();
        d->free.pop_back();
        event = slots_[id - 1].event;
      }
    }
    ContextScope scope(*this, ctx);
    if (!scope.ok()) {
      if (id != kNoEvent) release(id);
      return kNoEvent;
    }
    if (id == kNoEvent) {
      // Pool empty: the only place an event is created (warm-up, or more events in flight).
      CUresult r = driver_.event_create(&event, kEventDefault);
      if (r != kSuccess) {
        fail("cuEventCreate", r);
        return kNoEvent;
      }
      std::lock_guard<std::mutex> lock(pool_mu_);
      slots_.push_back(Slot{event, device});
      id = static_cast<EventId>(slots_.size());
      // Room for every event of this device in its free list, so release never allocates.
      if (d->free.capacity() < ++d->events) d->free.reserve(2 * d->events);
    }
    CUstream s = stream != nullptr ? static_cast<CUstream>(stream) : legacy_stream();
    CUresult r = driver_.event_record(event, s);
    if (r != kSuccess) {
      release(id);
      fail("cuEventRecord", r);
      return kNoEvent;
    }
    if (!options_.memory_peaks) sample_memory(*d, /*reset=*/false);
    return id;
  }

  bool query(EventId event) override {
    // Once failed, everything reads as complete so that nothing waits on events that will never
    // be read; elapsed_ms then declines and the engine uses host time.
    if (failed_.load(std::memory_order_relaxed)) return true;
    CUevent e = event_of(event);
    if (e == nullptr) return true;
    CUresult r = driver_.event_query(e);
    if (r == kSuccess) return true;
    if (r == kErrorNotReady) return false;
    fail("cuEventQuery", r);
    return true;
  }

  std::optional<double> elapsed_ms(EventId start, EventId end) override {
    if (failed_.load(std::memory_order_relaxed)) return std::nullopt;
    CUevent a = event_of(start);
    CUevent b = event_of(end);
    if (a == nullptr || b == nullptr) return std::nullopt;
    float ms = 0;
    CUresult r = driver_.event_elapsed(&ms, a, b);
    if (r != kSuccess) {
      fail("cuEventElapsedTime", r);
      return std::nullopt;
    }
    return static_cast<double>(ms);
  }

  void release(EventId event) override {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (event == kNoEvent || event > slots_.size()) return;
    const Slot& slot = slots_[event - 1];
    devices_[static_cast<std::size_t>(slot.device)]->free.push_back(event);
  }

  void synchronize(int device) override {
    if (failed_.load(std::memory_order_relaxed)) return;
    Device* d = lookup(device);
    if (d == nullptr) return;
    CUcontext ctx = context(*d, device);
    if (ctx == nullptr) return;
    ContextScope scope(*this, ctx);
    if (!scope.ok()) return;
    CUresult r = driver_.ctx_synchronize();
    if (r != kSuccess) fail("cuCtxSynchronize", r);
  }

  void reset_peak_memory(int device) override {
    if (options_.memory_peaks) {
      if (options_.reset_memory_peaks) options_.reset_memory_peaks(device);
      return;
    }
    if (failed_.load(std::memory_order_relaxed)) return;
    Device* d = lookup(device);
    if (d == nullptr) return;
    CUcontext ctx = context(*d, device);
    if (ctx == nullptr) return;
    ContextScope scope(*this, ctx);
    if (scope.ok()) sample_memory(*d, /*reset=*/true);
  }

  std::optional<DeviceReadings> peak_memory(int device) override {
    if (options_.memory_peaks) return options_.memory_peaks(device);
    if (failed_.load(std::memory_order_relaxed)) return std::nullopt;
    Device* d = lookup(device);
    if (d == nullptr || !d->sampled.load()) return std::nullopt;
    DeviceReadings peaks;
    peaks.allocated = peaks.reserved = d->mem_peak.load();
    return peaks;
  }

 private:
  struct Slot {
    CUevent event;
    int device;
  };
  struct Device {
    std::mutex init_mu;  // guards handle, name and retaining the context
    bool handle_known = false;
    CUdevice handle = 0;
    bool name_known = false;
    std::string name;
    bool bus_known = false;  // asked once; `bus` empty when the driver could not say
    std::string bus;
    std::atomic<CUcontext> ctx{nullptr};  // the retained primary context, once used
    std::atomic<std::uint64_t> mem_peak{0};
    std::atomic<bool> sampled{false};
    std::vector<EventId> free;  // guarded by pool_mu_
    std::size_t events = 0;     // events created for this device; pool_mu_
  };

  // Makes `ctx` current for a scope when it is not already (pushed, then popped), so that the
  // caller's own current context is left as it was.
  class ContextScope {
   public:
    ContextScope(CudaBackend& backend, CUcontext ctx) : backend_(backend) {
      CUcontext current = nullptr;
      CUresult r = backend_.driver_.ctx_get_current(&current);
      if (r != kSuccess) {
        backend_.fail("cuCtxGetCurrent", r);
        ok_ = false;
      } else if (current != ctx) {
        r = backend_.driver_.ctx_push(ctx);
        if (r != kSuccess) {
          backend_.fail("cuCtxPushCurrent", r);
          ok_ = false;
        } else {
          pushed_ = true;
        }
      }
    }
    ~ContextScope() {
      if (!pushed_) return;
      CUcontext popped = nullptr;
      CUresult r = backend_.driver_.ctx_pop(&popped);
      if (r != kSuccess) backend_.fail("cuCtxPopCurrent", r);
    }
    ContextScope(const ContextScope&) = delete;
    ContextScope& operator=(const ContextScope&) = delete;
    bool ok() const { return ok_; }

   private:
    CudaBackend& backend_;
    bool ok_ = true;
    bool pushed_ = false;
  };

  Device* lookup(int device) {
    if (device >= 0 && static_cast<std::size_t>(device) < devices_.size()) {
      return devices_[static_cast<std::size_t>(device)].get();
    }
    // A caller's mistake, not a driver error: said once, and only that device stays host-only.
    if (!range_reported_.exchange(true)) {
      say("[Perf] CUDA backend: device index " + std::to_string(device) + " out of range (" +
          std::to_string(devices_.size()) + " devices); host time for it");
    }
    return nullptr;
  }

  // d.init_mu held.
  bool ensure_handle(Device& d, int device) {
    if (d.handle_known) return true;
    CUresult r = driver_.device_get(&d.handle, device);
    if (r != kSuccess) {
      fail("cuDeviceGet", r);
      return false;
    }
    d.handle_known = true;
    return true;
  }

  // The device's primary context, retained at its first use; nullptr after a failure.
  CUcontext context(Device& d, int device) {
    CUcontext ctx = d.ctx.load(std::memory_order_acquire);
    if (ctx != nullptr) return ctx;
    std::lock_guard<std::mutex> lock(d.init_mu);
    ctx = d.ctx.load(std::memory_order_acquire);
    if (ctx != nullptr) return ctx;
    if (failed_.load() || !ensure_handle(d, device)) return nullptr;
    CUresult r = driver_.primary_ctx_retain(&ctx, d.handle);
    if (r != kSuccess || ctx == nullptr) {
      fail("cuDevicePrimaryCtxRetain", r);
      return nullptr;
    }
    d.ctx.store(ctx, std::memory_order_release);
    return ctx;
  }

  bool profiler_call(int device, CUresult (*call)(), const char* name) {
    if (call == nullptr) {
      if (!profiler_reported_.exchange(true)) {
        say("[Perf] CUDA backend: " + options_.library_path + " lacks " + name +
            "; no profiler capture range");
      }
      return false;
    }
    if (failed_.load(std::memory_order_relaxed)) return false;
    Device* d = lookup(device);
    if (d == nullptr) return false;
    CUcontext ctx = context(*d, device);
    if (ctx == nullptr) return false;
    ContextScope scope(*this, ctx);
    if (!scope.ok()) return false;
    CUresult r = call();
    if (r != kSuccess) {
      if (!profiler_reported_.exchange(true)) {
        say(std::string("[Perf] CUDA backend: ") + name + " failed: " + error_text(r) +
            "; no profiler capture range");
      }
      return false;
    }
    return true;
  }

  CUevent event_of(EventId id) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (id == kNoEvent || id > slots_.size()) return nullptr;
    return slots_[id - 1].event;
  }

  // Device memory in use now (total - free); the device's context is current.
  void sample_memory(Device& d, bool reset) {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    CUresult r = driver_.mem_get_info(&free_bytes, &total_bytes);
    if (r != kSuccess) {
      fail("cuMemGetInfo", r);
      return;
    }
    std::uint64_t used = total_bytes >= free_bytes ? total_bytes - free_bytes : 0;
    if (reset) {
      d.mem_peak.store(used);
    } else {
      std::uint64_t peak = d.mem_peak.load(std::memory_order_relaxed);
      while (used > peak && !d.mem_peak.compare_exchange_weak(peak, used)) {
      }
    }
    d.sampled.store(true, std::memory_order_relaxed);
  }

  std::string error_text(CUresult r) const {
    const char* name = nullptr;
    if (driver_.get_error_name != nullptr && driver_.get_error_name(r, &name) == kSuccess &&
        name != nullptr) {
      return std::string(name) + " (" + std::to_string(r) + ")";
    }
    return "error " + std::to_string(r);
  }

  // A driver error: reported once, then the backend goes host-only.
  void fail(const char* call, CUresult r) {
    failed_.store(true);
    report(std::string(call) + " failed: " + error_text(r));
  }

  void report(const std::string& what) {
    if (reported_.exchange(true)) return;
    say("[Perf] CUDA backend: " + what + "; device timing off, host time only");
  }

  void say(const std::string& line) {
    if (options_.notice) {
      options_.notice(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  const Driver driver_;
  const CudaOptions options_;
  std::vector<std::unique_ptr<Device>> devices_;  // fixed size after construction
  std::atomic<bool> failed_{false};
  std::atomic<bool> reported_{false};
  std::atomic<bool> range_reported_{false};
  std::atomic<bool> bus_reported_{false};
  std::atomic<bool> profiler_reported_{false};
  std::mutex pool_mu_;
  std::vector<Slot> slots_;  // EventId i is slots_[i - 1]; guarded by pool_mu_
};

}  // namespace

std::shared_ptr<DeviceBackend> make_cuda_backend(const CudaOptions& options) {
  const NotUsed not_used(options.notice, "CUDA backend", "host-only timing");
  void* handle = open_library(options.library_path, not_used);
  if (handle == nullptr) return nullptr;
  Driver d;
  std::string missing;
  // The `_v2` names are the ones cuda.h maps the plain names to; cuEventElapsedTime_v2 exists
  // only from CUDA 12.8 drivers on, so older drivers fall back to the original entry point.
  bool ok =
      resolve(handle, d.init, {"cuInit"}, &missing) &&
      resolve(handle, d.device_get_count, {"cuDeviceGetCount"}, &missing) &&
      resolve(handle, d.device_get, {"cuDeviceGet"}, &missing) &&
      resolve(handle, d.device_get_name, {"cuDeviceGetName"}, &missing) &&
      resolve(handle, d.primary_ctx_retain, {"cuDevicePrimaryCtxRetain"}, &missing) &&
      resolve(handle, d.primary_ctx_release, {"cuDevicePrimaryCtxRelease_v2"}, &missing) &&
      resolve(handle, d.ctx_get_current, {"cuCtxGetCurrent"}, &missing) &&
      resolve(handle, d.ctx_push, {"cuCtxPushCurrent_v2"}, &missing) &&
      resolve(handle, d.ctx_pop, {"cuCtxPopCurrent_v2"}, &missing) &&
      resolve(handle, d.ctx_synchronize, {"cuCtxSynchronize"}, &missing) &&
      resolve(handle, d.event_create, {"cuEventCreate"}, &missing) &&
      resolve(handle, d.event_record, {"cuEventRecord"}, &missing) &&
      resolve(handle, d.event_query, {"cuEventQuery"}, &missing) &&
      resolve(handle, d.event_elapsed, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &missing) &&
      resolve(handle, d.event_destroy, {"cuEventDestroy_v2"}, &missing) &&
      resolve(handle, d.mem_get_info, {"cuMemGetInfo_v2"}, &missing);
  if (!ok) {
    not_used(options.library_path + " lacks " + missing);
    dlclose(handle);  // not initialized yet, so safe to unload
    return nullptr;
  }
  resolve(handle, d.get_error_name, {"cuGetErrorName"}, nullptr);
  resolve(handle, d.device_get_pci_bus_id, {"cuDeviceGetPCIBusId"}, nullptr);
  resolve(handle, d.profiler_start, {"cuProfilerStart"}, nullptr);
  resolve(handle, d.profiler_stop, {"cuProfilerStop"}, nullptr);

  CUresult r = d.init(0);
  if (r != kSuccess) {
    not_used("cuInit failed (error " + std::to_string(r) + ")");
    return nullptr;
  }
  int count = 0;
  r = d.device_get_count(&count);
  if (r != kSuccess || count <= 0) {
    not_used(r != kSuccess ? "cuDeviceGetCount failed (error " + std::to_string(r) + ")"
                           : std::string("no CUDA device"));
    return nullptr;
  }
  return std::make_shared<CudaBackend>(d, count, options);
}

}  // namespace vxperf
