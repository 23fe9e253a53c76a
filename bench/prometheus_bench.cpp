// What the Prometheus sink costs. It runs once per settled request or training window, on the
// thread that settled it, never inside a stage: compare these numbers with a request's seconds.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "vxperf/prometheus.h"

namespace {

// A text-to-video request: text encoder, 50 transformer forwards, 50 scheduler steps, VAE
// decode, post-processing (5 stages, 102 calls).
struct Request {
  vxperf::RequestRecord record;
  vxperf::RequestDetail detail;
};

Request make_request() {
  Request r;
  r.record.e2e_s = 13.06;
  auto add = [&](const char* name, int calls, double ms) {
    vxperf::StageSummary s;
    s.name = name;
    s.count = calls;
    r.record.stages.push_back(s);
    r.detail.stage_calls_ms.emplace_back(calls, ms);
  };
  add("text_encoder", 1, 40);
  add("transformer", 50, 270);
  add("scheduler", 50, 2);
  add("vae_decode", 1, 2730);
  add("postprocess", 1, 15);
  vxperf::DitThroughput dit;
  dit.tflops = 754.7;
  dit.mfu = 0.51;
  r.record.dit = dit;
  r.record.readings = vxperf::DeviceReadings{46ull << 30, 102ull << 30};
  return r;
}

void BM_SinkOnRequest(benchmark::State& state) {
  vxperf::PrometheusSink sink;
  Request r = make_request();
  for (auto _ : state) sink.on_request(r.record, r.detail);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SinkOnRequest);

// Several serving threads settling at once (they serialize on the sink's update lock).
void BM_SinkOnRequestContended(benchmark::State& state) {
  static vxperf::PrometheusSink* sink = nullptr;
  if (state.thread_index() == 0) sink = new vxperf::PrometheusSink();
  Request r = make_request();
  for (auto _ : state) sink->on_request(r.record, r.detail);
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    delete sink;
    sink = nullptr;
  }
}
BENCHMARK(BM_SinkOnRequestContended)->Threads(2)->Threads(4)->UseRealTime();

void BM_SinkOnTrainWindow(benchmark::State& state) {
  vxperf::PrometheusSink sink;
  vxperf::TrainWindowRecord w;
  w.steps = 50;
  vxperf::TrainThroughput t;
  t.samples_per_s = 0.625;
  t.mfu = 0.557;
  t.hfu = 0.743;
  w.throughput = t;
  vxperf::WindowDetail detail;
  for (int i = 0; i < 50; ++i) {
    vxperf::StepRecord s;
    s.step = i;
    s.total_s = 1.6;
    detail.steps.push_back(s);
  }
  for (auto _ : state) sink.on_train_window(w, detail);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SinkOnTrainWindow);

// One scrape's rendering (the HTTP thread's work), with the request metrics above.
void BM_Render(benchmark::State& state) {
  vxperf::PrometheusSink sink;
  Request r = make_request();
  sink.on_request(r.record, r.detail);
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = sink.render();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Render);

}  // namespace

BENCHMARK_MAIN();
