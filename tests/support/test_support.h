// Helpers shared by the tests: an engine on virtual time with a simulated device.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "vxperf/engine.h"
#include "vxperf/model.h"
#include "vxperf/testing.h"
#include "vxperf/training.h"

namespace vxperf::testing {

// A model as a front end declares it: its parameters, attention widths and text length.
inline ModelInfo model_info(std::int64_t params, AttentionWidths attention,
                            std::int64_t text_tokens) {
  ModelInfo m;
  m.params = params;
  m.attention = attention;
  m.text_tokens = text_tokens;
  return m;
}

// Wan2.1 T2V-1.3B: 1,418,996,800 parameters, 30 blocks of 1536-wide self- and cross-attention
// (60 modules), 512 text tokens.
inline ModelInfo wan_1_3b() { return model_info(1418996800, {46080, 46080, 60}, 512); }

struct TestEngine {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(100.0);
  std::shared_ptr<SimulatedBackend> device =
      std::make_shared<SimulatedBackend>("NVIDIA H100 80GB HBM3");
  std::shared_ptr<MemoryOutput> output = std::make_shared<MemoryOutput>();
  std::unique_ptr<Engine> engine;

  explicit TestEngine(std::map<std::string, std::string> env = {{"VIDEOX_PERF", "1"}},
                      bool with_device = true, Topology topology = {}) {
    EngineOptions options;
    options.settings = Settings::parse(env_of(std::move(env)), nullptr);
    options.clock = clock;
    if (with_device) options.device = device;
    options.log = output->log_fn();
    options.sinks.push_back(output);
    options.topology = topology;
    engine = std::make_unique<Engine>(std::move(options));
  }
};

// One optimizer step of one micro-step on `trainer`: a forward over `tokens` tokens x `samples`
// lasting `forward_s`, then the optimizer's step lasting `optimizer_s`; `advance(seconds)` moves
// the test's time.
template <typename Advance>
void train_step(Trainer& trainer, Advance&& advance, std::int64_t tokens, std::int64_t samples,
                double forward_s, double optimizer_s) {
  static const int optimizer = 0;
  MicroStep micro(&trainer);
  {
    ModelCall forward(Phase::kForward, tokens, samples, &trainer);
    advance(forward_s);
  }
  OptimizerStep step(&optimizer, true, &trainer);
  advance(optimizer_s);
}

inline void train_step(Trainer& trainer, ManualClock& clock, std::int64_t tokens,
                       std::int64_t samples, double forward_s, double optimizer_s) {
  train_step(
      trainer, [&clock](double s) { clock.advance(s); }, tokens, samples, forward_s, optimizer_s);
}

}  // namespace vxperf::testing
