// A program that configures vxperf in code (vxperf::configure) instead of through the
// environment, for process_env.cmake: level forced on, a records path and every-N from code, an
// in-process sink, and the environment still winning where it is set.
//
// usage: configure_example RECORDS_PATH
#include <atomic>
#include <cstdio>
#include <memory>

#include "vxperf/vxperf.h"

namespace {

struct CountingSink : vxperf::RecordSink {
  std::atomic<int> requests{0}, windows{0}, failed{0};
  void on_request(const vxperf::RequestRecord&, const vxperf::RequestDetail& d) override {
    ++requests;
    if (d.failed) ++failed;
  }
  void on_train_window(const vxperf::TrainWindowRecord&, const vxperf::WindowDetail&) override {
    ++windows;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto sink = std::make_shared<CountingSink>();
  vxperf::Config config;
  config.level = 1;
  config.settings.json_path = argv[1];
  config.settings.every = 2;
  config.sinks.push_back(sink);
  bool first = vxperf::configure(config);
  vxperf::Engine* e = vxperf::engine();
  bool again = vxperf::configure(config);  // the engine is on: ignored
  std::printf("configure %d %d, engine %s\n", first, again, e ? "on" : "off");

  for (int r = 0; r < 2; ++r) {
    vxperf::RequestScope request;
    vxperf::StageScope s(vxperf::kTransformer);
  }
  try {
    vxperf::RequestScope request;
    throw 1;
  } catch (int) {
  }
  int optimizer = 0;
  for (int step = 0; step < 4; ++step) {
    vxperf::MicroStep micro;
    vxperf::OptimizerStep opt(&optimizer);
  }
  vxperf::shutdown();
  std::printf("sink saw %d requests (%d failed), %d windows\n", sink->requests.load(),
              sink->failed.load(), sink->windows.load());
  return 0;
}
