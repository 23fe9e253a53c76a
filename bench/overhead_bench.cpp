// Overhead of the measurement points, against the cost of reading the clock twice.
//
// Goals (issue "Core engine"): a stage scope with metrics off below 5% of BM_ClockPair; an
// enabled host-only stage scope below 2.5x BM_ClockPair. BM_TrainStep: one instrumented training
// step of one micro-step with six phases, host-only; BM_TrainStepDefault the same through the
// default arguments (the process-wide engine's trainer).
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <optional>

#include "vxperf/config.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/training.h"

namespace {

std::unique_ptr<vxperf::Engine> host_engine(std::int64_t every) {
  vxperf::EngineOptions parts;
  parts.settings.level = 1;
  parts.settings.every = every;
  parts.log = [](std::string_view) {};  // the benchmarks time the measurement, not the writing
  return std::make_unique<vxperf::Engine>(std::move(parts));
}

void BM_ClockPair(benchmark::State& state) {
  for (auto _ : state) {
    auto a = std::chrono::steady_clock::now();
    auto b = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_ClockPair);

// Metrics off: no request is open on the thread, so the scope is one thread-local test.
void BM_StageDisabled(benchmark::State& state) {
  for (auto _ : state) {
    vxperf::StageScope scope(vxperf::kTransformer, 32760, 2);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_StageDisabled);

void BM_StageEnabledHost(benchmark::State& state) {
  auto engine = host_engine(50);
  // One long request; its pair vector is emptied every 4096 stages (untimed) to bound memory.
  std::optional<vxperf::RequestScope> request;
  request.emplace(*engine);
  std::size_t n = 0;
  for (auto _ : state) {
    {
      vxperf::StageScope scope(vxperf::kTransformer, 32760, 2);
      benchmark::ClobberMemory();
    }
    if (++n % 4096 == 0) {
      state.PauseTiming();
      request.reset();
      request.emplace(*engine);
      state.ResumeTiming();
    }
  }
  request.reset();
}
BENCHMARK(BM_StageEnabledHost);

void BM_TrainStep(benchmark::State& state) {
  // Windows of 50 steps, as by default: their aggregation is part of the per-step cost.
  auto engine = host_engine(50);
  vxperf::Trainer& trainer = engine->trainer();
  vxperf::ModelInfo model;
  model.params = 1418996800;
  model.attention = vxperf::AttentionWidths{46080, 46080, 60};
  model.text_tokens = 512;
  trainer.register_model(model);
  int optimizer = 0;
  for (auto _ : state) {
    vxperf::MicroStep micro(&trainer);  // data + prep
    { vxperf::ModelCall c(vxperf::Phase::kVaeEncode, 0, 1, &trainer); }
    { vxperf::ModelCall c(vxperf::Phase::kTextEncoder, 0, 1, &trainer); }
    { vxperf::ModelCall c(vxperf::Phase::kForward, 32760, 1, &trainer); }
    { vxperf::Backward b(&trainer); }
    { vxperf::Clip c(&trainer); }
    { vxperf::OptimizerStep o(&optimizer, true, &trainer); }
  }
}
BENCHMARK(BM_TrainStep);

// BM_TrainStep through the default arguments, as most programs write it: every scope asks
// vxperf::trainer() for the process-wide engine's trainer (configured here by vxperf::configure),
// with no lock on that path.
void BM_TrainStepDefault(benchmark::State& state) {
  static const bool configured = [] {
    vxperf::Config config;
    config.level = 1;
    config.settings.every = 50;
    config.log = [](std::string_view) {};
    return vxperf::configure(std::move(config)) && vxperf::engine() != nullptr;
  }();
  if (!configured) {
    state.SkipWithError("the process-wide engine was built before this benchmark");
    return;
  }
  vxperf::ModelInfo model;
  model.params = 1418996800;
  model.attention = vxperf::AttentionWidths{46080, 46080, 60};
  model.text_tokens = 512;
  vxperf::trainer()->register_model(model);
  int optimizer = 0;
  for (auto _ : state) {
    vxperf::MicroStep micro;
    { vxperf::ModelCall c(vxperf::Phase::kVaeEncode); }
    { vxperf::ModelCall c(vxperf::Phase::kTextEncoder); }
    { vxperf::ModelCall c(vxperf::Phase::kForward, 32760, 1); }
    { vxperf::Backward b; }
    { vxperf::Clip c; }
    { vxperf::OptimizerStep o(&optimizer); }
  }
}
BENCHMARK(BM_TrainStepDefault);

}  // namespace

BENCHMARK_MAIN();
