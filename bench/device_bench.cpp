// The engine's cost around the driver calls with the CUDA backend, measured over the fake driver
// (tests/fake_cuda), and how many driver calls one stage makes. No main() here: overhead_bench.cpp
// has it.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <memory>
#include <optional>
#include <string_view>

#include "vxperf/clock.h"
#include "vxperf/cuda_backend.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/sink.h"

namespace {

struct FakeControl {
  void* handle = dlopen(VXPERF_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  template <class Fn>
  Fn get(const char* name) const {
    return handle ? reinterpret_cast<Fn>(dlsym(handle, name)) : nullptr;
  }
  void (*reset)() = get<void (*)()>("fake_cuda_reset");
  long (*calls)(const char*) = get<long (*)(const char*)>("fake_cuda_calls");
  long (*events_created)() = get<long (*)()>("fake_cuda_events_created");
  void (*set_current_device)(int) = get<void (*)(int)>("fake_cuda_set_current_device");
  bool ok() const { return reset && calls && events_created && set_current_device; }
};

constexpr int kStagesPerRequest = 256;

// One StageScope per iteration inside an open request on device 0 (two event records); every
// kStagesPerRequest stages the request is closed and settled with the timer paused. Argument:
// 1 when the caller's thread already has the device's context current (PyTorch on that device),
// 0 when it has none (every record then pushes and pops the primary context).
// Counters: driver calls per stage at the markers (timed), at settle and per request (untimed,
// amortized), and events created after warm-up (0: the pool is reused).
void BM_StageEnabledDevice(benchmark::State& state) {
  FakeControl fake;
  if (!fake.ok()) {
    state.SkipWithError("fake CUDA driver not loaded");
    return;
  }
  fake.reset();
  const bool context_current = state.range(0) != 0;
  vxperf::CudaOptions options;
  options.library_path = VXPERF_FAKE_CUDA_PATH;
  options.notice = [](std::string_view) {};
  std::shared_ptr<vxperf::DeviceBackend> backend = vxperf::make_cuda_backend(options);
  if (!backend) {
    state.SkipWithError("CUDA backend not made over the fake driver");
    return;
  }
  vxperf::EngineOptions parts;
  parts.settings = vxperf::Settings::parse(
      [](const std::string& name) -> std::optional<std::string> {
        if (name == "VIDEOX_PERF") return "1";
        return std::nullopt;
      },
      nullptr);
  parts.clock = std::make_shared<vxperf::SteadyClock>();
  parts.device = backend;
  parts.log = [](std::string_view) {};  // the benchmarks time the measurement, not the writing
  vxperf::Engine engine(std::move(parts));
  fake.set_current_device(context_current ? 0 : -1);
  const vxperf::RequestOptions on_device{0, nullptr};

  // Warm-up: one full request fills the event pool.
  {
    vxperf::RequestScope request(engine, on_device);
    for (int i = 0; i < kStagesPerRequest; ++i)
      vxperf::StageScope s(vxperf::kTransformer, 32760, 2);
  }
  const long created = fake.events_created();
  const long calls_start = fake.calls("*");

  long marker_calls = 0;
  long settle_calls = 0;
  int in_request = 0;
  std::optional<vxperf::RequestScope> request;
  request.emplace(engine, on_device);
  long mark = fake.calls("*");
  for (auto _ : state) {
    { vxperf::StageScope s(vxperf::kTransformer, 32760, 2); }
    if (++in_request == kStagesPerRequest) {
      state.PauseTiming();
      marker_calls += fake.calls("*") - mark;
      request.reset();  // settle: queries, elapsed times, the request's synchronize
      request.emplace(engine, on_device);
      in_request = 0;
      mark = fake.calls("*");
      state.ResumeTiming();
    }
  }
  marker_calls += fake.calls("*") - mark;
  request.reset();
  settle_calls = fake.calls("*") - calls_start - marker_calls;
  fake.set_current_device(-1);

  const double stages = static_cast<double>(state.iterations());
  state.counters["marker_calls_per_stage"] = static_cast<double>(marker_calls) / stages;
  state.counters["settle_calls_per_stage"] = static_cast<double>(settle_calls) / stages;
  state.counters["events_created_after_warmup"] =
      static_cast<double>(fake.events_created() - created);
  state.SetLabel(context_current ? "context current" : "no current context");
}
BENCHMARK(BM_StageEnabledDevice)->Arg(1)->Arg(0);

// The floor under the numbers above: one call into the fake driver (a lock and a counter), to
// tell the engine's own cost from the fake's.
void BM_FakeDriverCall(benchmark::State& state) {
  FakeControl fake;
  using GetCurrent = int (*)(void**);
  auto get_current = fake.get<GetCurrent>("cuCtxGetCurrent");
  auto init = fake.get<int (*)(unsigned)>("cuInit");
  if (!fake.ok() || get_current == nullptr || init == nullptr) {
    state.SkipWithError("fake CUDA driver not loaded");
    return;
  }
  fake.reset();
  init(0);
  void* ctx = nullptr;
  for (auto _ : state) {
    get_current(&ctx);
    benchmark::DoNotOptimize(ctx);
  }
}
BENCHMARK(BM_FakeDriverCall);

}  // namespace
