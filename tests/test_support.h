// Helpers shared by the tests: an engine on virtual time with a simulated device.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "vxperf/engine.h"

namespace vxperf::testing {

inline EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

struct TestEngine {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(100.0);
  std::shared_ptr<SimulatedBackend> device =
      std::make_shared<SimulatedBackend>("NVIDIA H100 80GB HBM3");
  std::shared_ptr<MemoryOutput> output = std::make_shared<MemoryOutput>();
  std::unique_ptr<Engine> engine;

  explicit TestEngine(std::map<std::string, std::string> env = {{"VIDEOX_PERF", "1"}},
                      bool with_device = true, Topology topology = {}) {
    EngineParts parts;
    parts.settings = Settings::parse(env_of(std::move(env)), nullptr);
    parts.clock = clock;
    if (with_device) parts.device = device;
    parts.output = output;
    parts.topology = topology;
    engine = std::make_unique<Engine>(std::move(parts));
  }
};

}  // namespace vxperf::testing
