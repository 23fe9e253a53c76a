// A program testing its own instrumentation with vxperf's test doubles (vxperf::testing): an engine
// on a manual clock, its records kept in memory.
#include <cstdio>
#include <memory>
#include <utility>

#include <vxperf/engine.h>
#include <vxperf/inference.h>
#include <vxperf/testing.h>

int main() {
  auto clock = std::make_shared<vxperf::ManualClock>(0.0);
  auto out = std::make_shared<vxperf::testing::MemoryOutput>();
  vxperf::EngineOptions options;
  options.settings.level = 1;
  options.clock = clock;
  options.log = out->log_fn();
  options.sinks.push_back(out);
  vxperf::Engine engine(std::move(options));
  {
    vxperf::RequestScope request(engine);
    clock->advance(1.5);
  }
  engine.shutdown();
  auto requests = out->requests();
  bool ok = requests.size() == 1 && requests[0].e2e_s == 1.5;
  std::printf("vxperf::testing: %zu request of %.1f s\n", requests.size(),
              requests.empty() ? 0.0 : requests[0].e2e_s);
  return ok ? 0 : 1;
}
