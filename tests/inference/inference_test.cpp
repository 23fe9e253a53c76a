#include "vxperf/inference.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "test_support.h"
#include "vxperf/markers.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;
using testing::TestEngine;

// One request on virtual time: text encoder 20 ms, `steps` transformer calls of 500 ms host
// (device 600 ms), VAE decode 1 s.
void run_request(TestEngine& t, int steps, RequestOptions options = {0, nullptr}) {
  RequestScope request(*t.engine, options);
  {
    StageScope s(kTextEncoder);
    t.clock->advance(0.020);
  }
  for (int i = 0; i < steps; ++i) {
    t.device->set_auto_time([] { return 0.0; });
    StageScope s(kTransformer, 32760, 2);
    t.clock->advance(0.5);
    t.device->set_auto_time([] { return 600.0; });
  }
  t.device->set_auto_time({});
  {
    StageScope s(kVaeDecode);
    t.clock->advance(1.0);
  }
  t.clock->advance(0.01);
}

TEST(Inference, RequestRecordAndLogLine) {
  TestEngine t;
  t.engine->declare_model("transformer", testing::wan_1_3b());
  t.device->set_readings(DeviceReadings{3ull << 30, 5ull << 30});
  run_request(t, 4);
  auto records = t.output->records();
  ASSERT_EQ(records.size(), 1u);
  Json r = Json::parse(records[0]);
  EXPECT_EQ(r["kind"], "request");
  EXPECT_EQ(r["req"], 0);
  EXPECT_EQ(r["warmup"], false);
  EXPECT_NEAR(r["e2e_s"].get<double>(), 0.02 + 4 * 0.5 + 1.0 + 0.01, 1e-9);
  EXPECT_EQ(r["stages"]["transformer"]["count"], 4);
  // Device time (600 ms) exceeds host time (500 ms): the larger is taken.
  EXPECT_NEAR(r["stages"]["transformer"]["mean_ms"].get<double>(), 600.0, 1e-9);
  EXPECT_NEAR(r["stages"]["text_encoder"]["total_ms"].get<double>(), 20.0, 1e-6);
  EXPECT_EQ(r["device"], "cuda:0");
  EXPECT_EQ(r["peak_alloc_bytes"], 3ull << 30);
  const Json& dit = r["dit"];
  EXPECT_EQ(dit["tokens"], 32760);
  EXPECT_EQ(dit["batch"], 2);
  double per_forward =
      2.0 * 1418996800 * 32760 + 4.0 * 32760.0 * 32760 * 46080 + 4.0 * 32760.0 * 512 * 46080;
  EXPECT_NEAR(dit["flops_per_fwd"].get<double>(), per_forward * 2, 1e3);
  EXPECT_NEAR(dit["tflops"].get<double>(), per_forward * 2 * 4 / 2.4 / 1e12, 1e-6);
  EXPECT_EQ(dit["peak_tflops"], 989.0);
  auto logs = t.output->logs();
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(
      logs[0].rfind("[Perf][rank0] req#0 | e2e 3.03s | text_encoder 0.02s(1x) | "
                    "transformer 2.40s(4x, 600+-0ms, min 600 max 600) | vae_dec 1.00s(1x) | "
                    "peak_alloc 3.0GiB peak_reserved 5.0GiB | DiT 5.88e+14 FLOPs/fwd (attn 68%)",
                    0),
      0u)
      << logs[0];
  // One synchronize per request, on the request's own device.
  EXPECT_EQ(t.device->synchronize_count(), 1);
  EXPECT_EQ(t.device->last_synchronized_device(), 0);
  EXPECT_EQ(t.device->live_events(), 0);  // every event went back
}

// A server's load: requests queued (note_queued), one leaving the queue as it begins
// (from_queue), one leaving unserved; every change reaches the sinks in order, never below 0.
TEST(Inference, TheLoadOfQueuedAndRunningRequestsReachesTheSinks) {
  struct Loads : RecordSink {
    std::vector<std::pair<std::int64_t, std::int64_t>> seen;
    void on_request_load(const RequestLoad& load) override {
      seen.emplace_back(load.in_flight, load.queued);
    }
  };
  TestEngine t;
  auto loads = std::make_shared<Loads>();
  t.engine->add_sink(loads);
  note_queued(*t.engine, 1);
  note_queued(*t.engine, 1);
  {
    RequestOptions options;
    options.from_queue = true;
    RequestScope request(*t.engine, options);
    RequestScope nested(*t.engine);  // the outer request owns it: no change
  }
  note_queued(*t.engine, -1);  // the other one's client hung up
  note_queued(*t.engine, -1);  // one too many: stays at 0
  { RequestScope request(*t.engine); }
  using P = std::pair<std::int64_t, std::int64_t>;
  EXPECT_EQ(loads->seen, (std::vector<P>{{0, 1}, {0, 2}, {1, 1}, {0, 1}, {0, 0}, {0, 0}, {1, 0},
                                         {0, 0}}));
}

TEST(Inference, SynchronizesTheRequestsDevice) {
  TestEngine t;
  run_request(t, 2, RequestOptions{3, nullptr});
  EXPECT_EQ(t.device->synchronize_count(), 1);
  EXPECT_EQ(t.device->last_synchronized_device(), 3);
  EXPECT_EQ(Json::parse(t.output->records()[0])["device"], "cuda:3");
}

TEST(Inference, HostOnlyRequestTouchesNoDevice) {
  TestEngine t;
  run_request(t, 2, RequestOptions{});
  EXPECT_EQ(t.device->synchronize_count(), 0);
  EXPECT_EQ(t.device->recorded_events(), 0);
  EXPECT_EQ(t.device->reset_count(), 0);
  Json r = Json::parse(t.output->records()[0]);
  EXPECT_FALSE(r.contains("device"));
  EXPECT_NEAR(r["stages"]["transformer"]["mean_ms"].get<double>(), 500.0, 1e-9);
}

TEST(Inference, NestedRequestBelongsToTheOuter) {
  TestEngine t;
  {
    RequestScope outer(*t.engine);
    EXPECT_TRUE(outer.active());
    {
      StageScope s(kTransformer, 100, 1);
      t.clock->advance(1.0);
    }
    {
      RequestScope inner(*t.engine);
      EXPECT_FALSE(inner.active());
      StageScope s(kVaeDecode);
      t.clock->advance(0.5);
    }
  }
  auto records = t.output->records();
  ASSERT_EQ(records.size(), 1u);
  Json r = Json::parse(records[0]);
  EXPECT_EQ(r["stages"].size(), 2u);
  EXPECT_EQ(r["stages"]["vae_dec"]["count"], 1);
}

TEST(Inference, ThrowingPipelineClosesItsRequest) {
  TestEngine t;
  EXPECT_THROW(
      {
        RequestScope request(*t.engine, RequestOptions{0, nullptr});
        StageScope s(kTransformer, 100, 1);
        t.clock->advance(0.25);
        throw std::runtime_error("out of memory");
      },
      std::runtime_error);
  EXPECT_EQ(internal::current_request, nullptr);
  EXPECT_EQ(t.output->records().size(), 1u);
  EXPECT_EQ(t.device->live_events(), 0);
  // The next request starts clean.
  run_request(t, 1);
  Json r = Json::parse(t.output->records()[1]);
  EXPECT_EQ(r["req"], 1);
  EXPECT_EQ(r["stages"]["transformer"]["count"], 1);
}

TEST(Inference, StagesOutsideARequestAreNotMeasured) {
  TestEngine t;
  {
    StageScope s(kTransformer, 100, 1);
    t.clock->advance(1.0);
  }
  EXPECT_TRUE(t.output->records().empty());
  EXPECT_EQ(t.device->recorded_events(), 0);
}

TEST(Inference, FirstTokenCountIsKept) {
  TestEngine t;
  t.engine->declare_model("transformer", testing::wan_1_3b());
  {
    RequestScope request(*t.engine);
    {
      StageScope s(kTransformer, 0, 1);  // unknown: does not count
      t.clock->advance(0.1);
    }
    {
      StageScope s(kTransformer, 1560, 2);
      t.clock->advance(0.1);
    }
    {
      StageScope s(kTransformer, 9999, 4);
      t.clock->advance(0.1);
    }
  }
  Json r = Json::parse(t.output->records()[0]);
  EXPECT_EQ(r["dit"]["tokens"], 1560);
  EXPECT_EQ(r["dit"]["batch"], 2);
  // The record names the first call's count; each call is priced at its own (the first, which
  // said none, at the stage's first known).
  const ModelInfo wan = testing::wan_1_3b();
  auto flops = [&](double tokens) {
    return forward_flops(static_cast<double>(wan.params), wan.attention, tokens,
                         static_cast<double>(wan.text_tokens), wan.attn_density);
  };
  const double work = flops(1560) * 2 * 2 + flops(9999) * 4;
  EXPECT_NEAR(r["dit"]["tflops"].get<double>(), work / 0.3 / 1e12, 1e-9 * work / 0.3 / 1e12);
  EXPECT_NEAR(r["dit"]["flops_per_fwd"].get<double>(), work / 3, 1e-9 * work / 3);
}

TEST(Inference, WarmupLevelTwoAndSummaryOnce) {
  TestEngine t({{"VIDEOX_PERF", "2"}, {"VIDEOX_PERF_WARMUP", "1"}});
  run_request(t, 2);
  run_request(t, 3);
  run_request(t, 3);
  t.engine->shutdown();
  t.engine->shutdown();
  auto logs = t.output->logs();
  // 3 requests x (record line + 3 stage dumps) + one summary.
  ASSERT_EQ(logs.size(), 13u);
  EXPECT_EQ(logs[0].rfind("[Perf][rank0] req#0 warmup |", 0), 0u);
  EXPECT_EQ(logs[2], "[Perf][rank0] transformer steps(ms): 600.0, 600.0");
  EXPECT_EQ(logs[12].rfind("[Perf][rank0] === 2 reqs (1 warmup excluded) | e2e p50 2.5s p95 2.5s | "
                           "transformer mean 600ms/step |",
                           0),
            0u)
      << logs[12];
}

TEST(Inference, NonLoggingRankStillWritesRecords) {
  TestEngine t({{"VIDEOX_PERF", "1"}}, true, Topology{2, 4, 1});
  run_request(t, 1);
  t.engine->shutdown();
  EXPECT_TRUE(t.output->logs().empty());
  ASSERT_EQ(t.output->records().size(), 1u);
  EXPECT_EQ(Json::parse(t.output->records()[0])["rank"], 2);
}

TEST(Inference, MfuAgainstEveryDevice) {
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_PEAK_TFLOPS", "100"}}, true, Topology{0, 8, 8});
  t.engine->declare_model("transformer", testing::wan_1_3b());
  run_request(t, 2);
  Json dit = Json::parse(t.output->records()[0])["dit"];
  EXPECT_EQ(dit["devices"], 8);
  EXPECT_EQ(dit["peak_tflops"], 800.0);
  EXPECT_NEAR(dit["mfu"].get<double>(), dit["tflops"].get<double>() / 800.0, 1e-12);
}

TEST(Inference, RequestModelsPriceTheirRequestOnly) {
  TestEngine t;
  t.engine->declare_model("transformer", testing::wan_1_3b());
  ModelInfo small;
  small.params = 1000000;
  {
    RequestScope request(*t.engine, RequestOptions{0, nullptr});
    declare_request_model("transformer", small);  // this pipeline's own transformer
    StageScope s(kTransformer, 100, 1);
    t.clock->advance(0.1);
  }
  run_request(t, 1);  // no models of its own: the engine's
  auto requests = t.output->requests();
  ASSERT_EQ(requests.size(), 2u);
  ASSERT_TRUE(requests[0].dit && requests[1].dit);
  EXPECT_EQ(requests[0].dit->params, 1000000);
  EXPECT_DOUBLE_EQ(requests[0].dit->flops_per_fwd, 2.0 * 1e6 * 100);
  EXPECT_EQ(requests[1].dit->params, 1418996800);
  declare_request_model("transformer", small);  // outside a request: nothing happens
}

TEST(Inference, SinksSeeFailuresAndEveryCall) {
  TestEngine t;
  try {
    RequestScope request(*t.engine);
    { StageScope s(kTransformer); t.clock->advance(0.25); }
    { StageScope s(kTransformer); t.clock->advance(0.5); }
    throw std::runtime_error("generation failed");
  } catch (const std::runtime_error&) {
  }
  run_request(t, 2);
  auto details = t.output->request_details();
  ASSERT_EQ(details.size(), 2u);
  EXPECT_TRUE(details[0].failed);
  EXPECT_FALSE(details[1].failed);
  ASSERT_EQ(details[0].stage_calls_ms.size(), 1u);
  EXPECT_EQ(details[0].stage_calls_ms[0], (std::vector<double>{250.0, 500.0}));
  // Each call's start after the request's (the clock stood still between them).
  ASSERT_EQ(details[0].stage_calls_start_s.size(), 1u);
  EXPECT_EQ(details[0].stage_calls_start_s[0], (std::vector<double>{0.0, 0.25}));
  // Its wall-clock start: its end less the 0.75 s it took.
  EXPECT_NEAR(t.output->requests()[0].ts - details[0].start_ts, 0.75, 1e-9);
}

}  // namespace
}  // namespace vxperf
