// Helpers shared by the tests: an engine on virtual time with a simulated device.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "vxperf/engine.h"
#include "vxperf/testing.h"

namespace vxperf::testing {

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

}  // namespace vxperf::testing
