// A tiny program using vxperf as a dependency: configured in code, one request of two stages,
// every record counted by an in-process sink.
#include <cstdio>
#include <memory>

#include <vxperf/vxperf.h>

namespace {

struct Count : vxperf::RecordSink {
  int requests = 0;
  void on_request(const vxperf::RequestRecord&, const vxperf::RequestDetail&) override {
    ++requests;
  }
};

}  // namespace

int main() {
  auto count = std::make_shared<Count>();
  vxperf::Config config;
  config.level = 1;
  config.sinks.push_back(count);
  vxperf::configure(config);
  {
    vxperf::RequestScope request;
    { vxperf::StageScope s(vxperf::kTextEncoder); }
    { vxperf::StageScope s(vxperf::kTransformer, 1024, 2); }
  }
  vxperf::shutdown();
  std::printf("vxperf %s: %d request recorded\n", vxperf::version(), count->requests);
  return count->requests == 1 ? 0 : 1;
}
