// A fake CUDA driver for tests and benchmarks without a GPU: a shared library exporting the cu*
// entry points the CUDA backend resolves (same names as libcuda.so.1), with scripted completion
// and elapsed times, plus a control API (fake_cuda_*) that tests resolve from the same dlopen
// handle. It follows the real driver where the backend depends on it: calls that need a current
// context fail with CUDA_ERROR_INVALID_CONTEXT without one, an event recorded on the NULL/legacy
// stream must belong to the current context, elapsed time of an incomplete event is NOT_READY,
// and cuCtxSynchronize completes the work of the current context's device only.
//
// Thread safety: every entry point takes one global lock; the context stack is per thread, as in
// the driver.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda_driver.h"

using namespace vxperf::cuda;  // NOLINT(google-build-using-namespace)

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kMaxDevices = 8;

// Every entry point, for the per-call counters (fake_cuda_calls("cuEventRecord")).
enum Call {
  kInit,
  kDeviceGetCount,
  kDeviceGet,
  kDeviceGetName,
  kPrimaryCtxRetain,
  kPrimaryCtxRelease,
  kCtxGetCurrent,
  kCtxSetCurrent,
  kCtxPush,
  kCtxPop,
  kCtxSynchronize,
  kEventCreate,
  kEventRecord,
  kEventQuery,
  kEventElapsedV2,
  kEventElapsed,
  kEventDestroyV2,
  kMemGetInfoV2,
  kGetErrorName,
  kDeviceGetPciBusId,
  kProfilerStart,
  kProfilerStop,
  kCallCount
};
const char* const kCallNames[kCallCount] = {"cuInit",
                                            "cuDeviceGetCount",
                                            "cuDeviceGet",
                                            "cuDeviceGetName",
                                            "cuDevicePrimaryCtxRetain",
                                            "cuDevicePrimaryCtxRelease_v2",
                                            "cuCtxGetCurrent",
                                            "cuCtxSetCurrent",
                                            "cuCtxPushCurrent_v2",
                                            "cuCtxPopCurrent_v2",
                                            "cuCtxSynchronize",
                                            "cuEventCreate",
                                            "cuEventRecord",
                                            "cuEventQuery",
                                            "cuEventElapsedTime_v2",
                                            "cuEventElapsedTime",
                                            "cuEventDestroy_v2",
                                            "cuMemGetInfo_v2",
                                            "cuGetErrorName",
                                            "cuDeviceGetPCIBusId",
                                            "cuProfilerStart",
                                            "cuProfilerStop"};

struct Event {
  int device = 0;
  bool live = true;
  bool recorded = false;
  bool done = true;  // an event never recorded reports complete, as in the driver
  int queries_left = 0;
  double ts_ms = 0;
};

struct State {
  std::mutex mu;
  int device_count = 2;
  CUresult init_error = kSuccess;
  bool initialized = false;
  std::string names[kMaxDevices];
  std::string bus_ids[kMaxDevices];
  std::uint64_t mem_used[kMaxDevices] = {};
  std::uint64_t mem_total[kMaxDevices] = {};
  std::vector<Event> events;  // CUevent h is events[h - 1]
  int completion_queries = 0;
  bool manual = false;
  std::deque<float> elapsed_script;
  double clock_ms = 0;
  double record_step_ms = 1.0;
  long calls[kCallCount] = {};
  long events_created = 0;
  long events_destroyed = 0;
  int syncs[kMaxDevices] = {};
  int records[kMaxDevices] = {};
  int retains[kMaxDevices] = {};
  int touched[kMaxDevices] = {};
  int last_sync_device = -1;
  int fail_call = -1;
  CUresult fail_code = kSuccess;
  int fail_times = 0;  // -1: every call from now on
  std::uintptr_t last_stream = 0;
  unsigned last_event_flags = 0;
  int profiling = -1;  // the device whose context cuProfilerStart made current; -1: off
  int captured_records[kMaxDevices] = {};  // events recorded while profiling
  // The wall-clock seconds of the first and last events recorded while profiling (what a
  // profiler's GPU trace would span; the GPU check's rehearsal reads them).
  double captured_first_s = -1;
  double captured_last_s = -1;
  std::uint64_t generation = 0;  // bumped by reset: stale per-thread context stacks are dropped

  void reset() {
    device_count = 2;
    init_error = kSuccess;
    initialized = false;
    for (int i = 0; i < kMaxDevices; ++i) {
      names[i] = "NVIDIA H100 80GB HBM3";
      char bus[32];
      std::snprintf(bus, sizeof bus, "0000:%02X:00.0", 0x1B + 0x10 * i);
      bus_ids[i] = bus;
      mem_used[i] = 0;
      mem_total[i] = std::uint64_t{80} << 30;
      syncs[i] = records[i] = retains[i] = touched[i] = 0;
    }
    events.clear();
    completion_queries = 0;
    manual = false;
    elapsed_script.clear();
    clock_ms = 0;
    record_step_ms = 1.0;
    std::fill(std::begin(calls), std::end(calls), 0);
    events_created = events_destroyed = 0;
    last_sync_device = -1;
    fail_call = -1;
    fail_code = kSuccess;
    fail_times = 0;
    last_stream = 0;
    last_event_flags = 0;
    profiling = -1;
    std::fill(std::begin(captured_records), std::end(captured_records), 0);
    captured_first_s = captured_last_s = -1;
    ++generation;
  }
  State() { reset(); }
};

State& state() {
  // A static object, not a leaked one: the library may be unloaded between tests.
  static State s;
  return s;
}

struct ThreadContexts {
  std::uint64_t generation = 0;
  std::vector<int> stack;  // device indices; the back is current
};
thread_local ThreadContexts t_contexts;

std::vector<int>& ctx_stack(State& s) {
  if (t_contexts.generation != s.generation) {
    t_contexts.generation = s.generation;
    t_contexts.stack.clear();
  }
  return t_contexts.stack;
}

int current_device(State& s) {
  auto& stack = ctx_stack(s);
  return stack.empty() ? -1 : stack.back();
}

CUcontext ctx_handle(int device) {
  return reinterpret_cast<CUcontext>(std::uintptr_t{0x1000} + 0x10 * std::uintptr_t(device));
}
int ctx_device(CUcontext ctx) {
  auto v = reinterpret_cast<std::uintptr_t>(ctx);
  if (v < 0x1000 || (v - 0x1000) % 0x10 != 0) return -1;
  return static_cast<int>((v - 0x1000) / 0x10);
}

Event* event_of(State& s, CUevent e) {
  auto h = reinterpret_cast<std::uintptr_t>(e);
  if (h == 0 || h > s.events.size() || !s.events[h - 1].live) return nullptr;
  return &s.events[h - 1];
}

// Counts the call and applies an injected failure; returns the error to return, or success.
CUresult enter(State& s, Call call) {
  ++s.calls[call];
  if (s.fail_call == call && s.fail_times != 0) {
    if (s.fail_times > 0) --s.fail_times;
    return s.fail_code;
  }
  if (call != kInit && call != kGetErrorName && !s.initialized) return kErrorNotInitialized;
  return kSuccess;
}

bool valid_device(State& s, int d) { return d >= 0 && d < s.device_count && d < kMaxDevices; }

}  // namespace

#define FAKE_ENTER(call)                  \
  State& s = state();                     \
  std::lock_guard<std::mutex> lock(s.mu); \
  if (CUresult err = enter(s, call); err != kSuccess) return err

// ---- driver entry points ------------------------------------------------------------------------

FAKE_EXPORT CUresult cuInit(unsigned flags) {
  FAKE_ENTER(kInit);
  if (flags != 0) return 1;  // CUDA_ERROR_INVALID_VALUE
  if (s.init_error != kSuccess) return s.init_error;
  s.initialized = true;
  return kSuccess;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int* count) {
  FAKE_ENTER(kDeviceGetCount);
  *count = s.device_count;
  return kSuccess;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_ENTER(kDeviceGet);
  if (!valid_device(s, ordinal)) return kErrorInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

FAKE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  FAKE_ENTER(kDeviceGetName);
  if (!valid_device(s, device)) return kErrorInvalidDevice;
  if (len <= 0) return 1;
  std::strncpy(name, s.names[device].c_str(), static_cast<std::size_t>(len) - 1);
  name[len - 1] = '\0';
  return kSuccess;
}

FAKE_EXPORT CUresult cuDeviceGetPCIBusId(char* bus, int len, CUdevice device) {
  FAKE_ENTER(kDeviceGetPciBusId);
  if (!valid_device(s, device)) return kErrorInvalidDevice;
  if (len <= 0) return 1;
  std::strncpy(bus, s.bus_ids[device].c_str(), static_cast<std::size_t>(len) - 1);
  bus[len - 1] = '\0';
  return kSuccess;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  FAKE_ENTER(kPrimaryCtxRetain);
  if (!valid_device(s, device)) return kErrorInvalidDevice;
  ++s.retains[device];
  ++s.touched[device];
  *ctx = ctx_handle(device);
  return kSuccess;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  FAKE_ENTER(kPrimaryCtxRelease);
  if (!valid_device(s, device) || s.retains[device] <= 0) return kErrorInvalidContext;
  --s.retains[device];
  return kSuccess;
}

FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  FAKE_ENTER(kCtxGetCurrent);
  int d = current_device(s);
  *ctx = d < 0 ? nullptr : ctx_handle(d);
  return kSuccess;
}

FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  FAKE_ENTER(kCtxSetCurrent);
  auto& stack = ctx_stack(s);
  if (ctx == nullptr) {
    if (!stack.empty()) stack.pop_back();
    return kSuccess;
  }
  int d = ctx_device(ctx);
  if (!valid_device(s, d)) return kErrorInvalidContext;
  ++s.touched[d];
  if (stack.empty()) {
    stack.push_back(d);
  } else {
    stack.back() = d;
  }
  return kSuccess;
}

FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  FAKE_ENTER(kCtxPush);
  int d = ctx_device(ctx);
  if (!valid_device(s, d) || s.retains[d] <= 0) return kErrorInvalidContext;
  ++s.touched[d];
  ctx_stack(s).push_back(d);
  return kSuccess;
}

FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  FAKE_ENTER(kCtxPop);
  auto& stack = ctx_stack(s);
  if (stack.empty()) return kErrorInvalidContext;
  if (ctx != nullptr) *ctx = ctx_handle(stack.back());
  stack.pop_back();
  return kSuccess;
}

FAKE_EXPORT CUresult cuCtxSynchronize() {
  FAKE_ENTER(kCtxSynchronize);
  int d = current_device(s);
  if (d < 0) return kErrorInvalidContext;
  ++s.syncs[d];
  ++s.touched[d];
  s.last_sync_device = d;
  for (Event& e : s.events) {
    if (e.live && e.recorded && e.device == d) e.done = true;
  }
  return kSuccess;
}

FAKE_EXPORT CUresult cuEventCreate(CUevent* event, unsigned flags) {
  FAKE_ENTER(kEventCreate);
  int d = current_device(s);
  if (d < 0) return kErrorInvalidContext;
  Event e;
  e.device = d;
  s.events.push_back(e);
  s.last_event_flags = flags;
  ++s.events_created;
  *event = reinterpret_cast<CUevent>(static_cast<std::uintptr_t>(s.events.size()));
  return kSuccess;
}

FAKE_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  FAKE_ENTER(kEventRecord);
  Event* e = event_of(s, event);
  if (e == nullptr) return kErrorInvalidHandle;
  auto sv = reinterpret_cast<std::uintptr_t>(stream);
  // The NULL, legacy and per-thread streams are the current context's: the event must be too.
  if (sv <= 2) {
    int d = current_device(s);
    if (d < 0) return kErrorInvalidContext;
    if (d != e->device) return kErrorInvalidHandle;
  }
  s.last_stream = sv;
  ++s.records[e->device];
  if (s.profiling >= 0) {
    ++s.captured_records[e->device];
    double now = std::chrono::duration<double>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
    if (s.captured_first_s < 0) s.captured_first_s = now;
    s.captured_last_s = now;
  }
  s.clock_ms += s.record_step_ms;
  e->ts_ms = s.clock_ms;
  e->recorded = true;
  e->queries_left = s.completion_queries;
  e->done = !s.manual && s.completion_queries == 0;
  return kSuccess;
}

FAKE_EXPORT CUresult cuEventQuery(CUevent event) {
  FAKE_ENTER(kEventQuery);
  Event* e = event_of(s, event);
  if (e == nullptr) return kErrorInvalidHandle;
  if (e->done) return kSuccess;
  if (s.manual) return kErrorNotReady;
  if (e->queries_left > 0) {
    --e->queries_left;
    return kErrorNotReady;
  }
  e->done = true;
  return kSuccess;
}

namespace {
CUresult elapsed(State& s, float* ms, CUevent start, CUevent end) {
  Event* a = event_of(s, start);
  Event* b = event_of(s, end);
  if (a == nullptr || b == nullptr || !a->recorded || !b->recorded) return kErrorInvalidHandle;
  if (!a->done || !b->done) return kErrorNotReady;
  if (!s.elapsed_script.empty()) {
    *ms = s.elapsed_script.front();
    s.elapsed_script.pop_front();
  } else {
    *ms = static_cast<float>(b->ts_ms - a->ts_ms);
  }
  return kSuccess;
}
}  // namespace

FAKE_EXPORT CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) {
  FAKE_ENTER(kEventElapsedV2);
  return elapsed(s, ms, start, end);
}

FAKE_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  FAKE_ENTER(kEventElapsed);
  return elapsed(s, ms, start, end);
}

FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent event) {
  FAKE_ENTER(kEventDestroyV2);
  Event* e = event_of(s, event);
  if (e == nullptr) return kErrorInvalidHandle;
  e->live = false;
  ++s.events_destroyed;
  return kSuccess;
}

FAKE_EXPORT CUresult cuMemGetInfo_v2(std::size_t* free_bytes, std::size_t* total_bytes) {
  FAKE_ENTER(kMemGetInfoV2);
  int d = current_device(s);
  if (d < 0) return kErrorInvalidContext;
  *total_bytes = s.mem_total[d];
  *free_bytes = s.mem_total[d] - std::min(s.mem_used[d], s.mem_total[d]);
  return kSuccess;
}

// The profiler's capture of the current context: on from cuProfilerStart to cuProfilerStop.
FAKE_EXPORT CUresult cuProfilerStart() {
  FAKE_ENTER(kProfilerStart);
  int d = current_device(s);
  if (d < 0) return kErrorInvalidContext;
  s.profiling = d;
  return kSuccess;
}

FAKE_EXPORT CUresult cuProfilerStop() {
  FAKE_ENTER(kProfilerStop);
  if (current_device(s) < 0) return kErrorInvalidContext;
  s.profiling = -1;
  return kSuccess;
}

FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  FAKE_ENTER(kGetErrorName);
  switch (error) {
    case kSuccess:
      *name = "CUDA_SUCCESS";
      break;
    case kErrorNotInitialized:
      *name = "CUDA_ERROR_NOT_INITIALIZED";
      break;
    case kErrorDeinitialized:
      *name = "CUDA_ERROR_DEINITIALIZED";
      break;
    case kErrorNoDevice:
      *name = "CUDA_ERROR_NO_DEVICE";
      break;
    case kErrorInvalidDevice:
      *name = "CUDA_ERROR_INVALID_DEVICE";
      break;
    case kErrorInvalidContext:
      *name = "CUDA_ERROR_INVALID_CONTEXT";
      break;
    case kErrorInvalidHandle:
      *name = "CUDA_ERROR_INVALID_HANDLE";
      break;
    case kErrorNotReady:
      *name = "CUDA_ERROR_NOT_READY";
      break;
    case kErrorLaunchFailed:
      *name = "CUDA_ERROR_LAUNCH_FAILED";
      break;
    default:
      *name = nullptr;
      return 1;
  }
  return kSuccess;
}

// ---- control API --------------------------------------------------------------------------------

#define FAKE_CONTROL() \
  State& s = state();  \
  std::lock_guard<std::mutex> lock(s.mu)

// Back to the defaults: 2 devices named "NVIDIA H100 80GB HBM3" with 80 GiB (PCI bus ids
// 0000:1B:00.0, 0000:2B:00.0, ...), nothing in use,
// events complete at once, elapsed = difference of record times (1 ms apart), no failures, all
// counters zero, not initialized, every thread's context stack emptied.
FAKE_EXPORT void fake_cuda_reset() {
  FAKE_CONTROL();
  s.reset();
}
FAKE_EXPORT void fake_cuda_set_device_count(int n) {
  FAKE_CONTROL();
  s.device_count = std::min(n, kMaxDevices);
}
FAKE_EXPORT void fake_cuda_set_init_error(int code) {
  FAKE_CONTROL();
  s.init_error = code;
}
FAKE_EXPORT void fake_cuda_set_device_name(int device, const char* name) {
  FAKE_CONTROL();
  if (device >= 0 && device < kMaxDevices) s.names[device] = name;
}
// What cuDeviceGetPCIBusId says of `device` (default "0000:1B:00.0", "0000:2B:00.0", ...).
FAKE_EXPORT void fake_cuda_set_pci_bus_id(int device, const char* bus) {
  FAKE_CONTROL();
  if (device >= 0 && device < kMaxDevices) s.bus_ids[device] = bus;
}
FAKE_EXPORT void fake_cuda_set_memory(int device, std::uint64_t used, std::uint64_t total) {
  FAKE_CONTROL();
  if (device < 0 || device >= kMaxDevices) return;
  s.mem_used[device] = used;
  s.mem_total[device] = total;
}
// Each event recorded from now on answers NOT_READY to its first `n` queries.
FAKE_EXPORT void fake_cuda_set_completion_queries(int n) {
  FAKE_CONTROL();
  s.completion_queries = std::max(0, n);
}
// On: recorded events stay pending until fake_cuda_complete_all() or a synchronize of their device.
FAKE_EXPORT void fake_cuda_set_manual_completion(int on) {
  FAKE_CONTROL();
  s.manual = on != 0;
}
FAKE_EXPORT void fake_cuda_complete_all() {
  FAKE_CONTROL();
  for (Event& e : s.events) {
    if (e.live && e.recorded) e.done = true;
  }
}
// The next elapsed-time answers, in order (then: difference of record times).
FAKE_EXPORT void fake_cuda_push_elapsed(float ms) {
  FAKE_CONTROL();
  s.elapsed_script.push_back(ms);
}
FAKE_EXPORT void fake_cuda_set_record_step_ms(double ms) {
  FAKE_CONTROL();
  s.record_step_ms = ms;
}
// The next `times` calls of entry point `name` return `code` (times -1: every call from now on).
FAKE_EXPORT void fake_cuda_fail(const char* name, int code, int times) {
  FAKE_CONTROL();
  s.fail_call = -1;
  for (int i = 0; i < kCallCount; ++i) {
    if (std::strcmp(kCallNames[i], name) == 0) s.fail_call = i;
  }
  s.fail_code = code;
  s.fail_times = times;
}
// Calls of entry point `name` so far; "*" for all of them.
FAKE_EXPORT long fake_cuda_calls(const char* name) {
  FAKE_CONTROL();
  long total = 0;
  for (int i = 0; i < kCallCount; ++i) {
    if (std::strcmp(name, "*") == 0 || std::strcmp(kCallNames[i], name) == 0) total += s.calls[i];
  }
  return total;
}
// The device the profiler captures now (-1: not capturing).
FAKE_EXPORT int fake_cuda_profiling() {
  FAKE_CONTROL();
  return s.profiling;
}
// Events recorded on `device` while the profiler captured.
// The wall-clock seconds (since the epoch) of the first and last events recorded while
// profiling; -1 when none was.
FAKE_EXPORT double fake_cuda_captured_first_s() {
  FAKE_CONTROL();
  return s.captured_first_s;
}
FAKE_EXPORT double fake_cuda_captured_last_s() {
  FAKE_CONTROL();
  return s.captured_last_s;
}

FAKE_EXPORT int fake_cuda_captured_records(int device) {
  FAKE_CONTROL();
  return device >= 0 && device < kMaxDevices ? s.captured_records[device] : 0;
}
FAKE_EXPORT long fake_cuda_events_created() {
  FAKE_CONTROL();
  return s.events_created;
}
FAKE_EXPORT long fake_cuda_live_events() {
  FAKE_CONTROL();
  return s.events_created - s.events_destroyed;
}
FAKE_EXPORT int fake_cuda_syncs(int device) {
  FAKE_CONTROL();
  return device >= 0 && device < kMaxDevices ? s.syncs[device] : 0;
}
FAKE_EXPORT int fake_cuda_records(int device) {
  FAKE_CONTROL();
  return device >= 0 && device < kMaxDevices ? s.records[device] : 0;
}
FAKE_EXPORT int fake_cuda_last_sync_device() {
  FAKE_CONTROL();
  return s.last_sync_device;
}
// Primary-context retains minus releases of `device`.
FAKE_EXPORT int fake_cuda_retained(int device) {
  FAKE_CONTROL();
  return device >= 0 && device < kMaxDevices ? s.retains[device] : 0;
}
// Calls that used `device`: context retained, pushed or made current, or synchronized.
FAKE_EXPORT int fake_cuda_touched(int device) {
  FAKE_CONTROL();
  return device >= 0 && device < kMaxDevices ? s.touched[device] : 0;
}
// The calling thread's current device (-1: no context current).
FAKE_EXPORT int fake_cuda_current_device() {
  FAKE_CONTROL();
  return current_device(s);
}
// Makes `device`'s context the calling thread's only current one (-1: none), as an application
// that already works on that device would have it. Not counted as a driver call.
FAKE_EXPORT void fake_cuda_set_current_device(int device) {
  FAKE_CONTROL();
  auto& stack = ctx_stack(s);
  stack.clear();
  if (device >= 0) stack.push_back(device);
}
FAKE_EXPORT std::uintptr_t fake_cuda_last_record_stream() {
  FAKE_CONTROL();
  return s.last_stream;
}
FAKE_EXPORT unsigned fake_cuda_last_event_flags() {
  FAKE_CONTROL();
  return s.last_event_flags;
}
