// The parallel layout (vxperf/topology.h): how a topology resolves, what the environment
// overrides, what a request and a window are priced with, the records' "parallel" object read
// back, and its round trip through a live trace (config and topology events).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "replay_check.h"
#include "test_support.h"
#include "vxperf/event_script.h"
#include "vxperf/inference.h"
#include "vxperf/markers.h"
#include "schema/record_reader.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;
using testing::TestEngine;

Topology world(int rank, int size) {
  Topology t;
  t.rank = rank;
  t.world_size = size;
  return t;
}

TEST(ParallelLayout, ContextAndTensorParallelShareSamples) {
  Topology t = world(5, 8);
  t.sp = 2;
  t.tp = 2;
  ParallelLayout p = parallel_layout(t);
  EXPECT_EQ(p.dp, 2);
  EXPECT_EQ(p.cp, 2);
  EXPECT_EQ(p.tp, 2);
  EXPECT_EQ(p.group, 4);  // a request is computed by cp x tp ranks
  EXPECT_EQ(p.dp_rank, 1);  // ranks 4..7 are the second group
  EXPECT_EQ(p.dp_shard, 1);
  EXPECT_EQ(p.dp_replicate, 2);
}

TEST(ParallelLayout, ShardAndReplicateFollowFromEachOther) {
  Topology t = world(0, 8);
  t.dp_shard = 4;
  ParallelLayout p = parallel_layout(t);
  EXPECT_EQ(p.dp, 8);
  EXPECT_EQ(p.dp_shard, 4);
  EXPECT_EQ(p.dp_replicate, 2);
  t.dp_shard = 0;
  t.dp_replicate = 2;
  p = parallel_layout(t);
  EXPECT_EQ(p.dp_shard, 4);
  EXPECT_EQ(p.group, 1);  // plain data parallel: each rank its own requests
}

TEST(ParallelLayout, AFormatOneScriptPricesRequestsAgainstTheWorld) {
  Topology t = world(3, 8);
  t.v1 = true;
  ParallelLayout p = parallel_layout(t);
  EXPECT_EQ(p.group, 8);
  EXPECT_EQ(p.dp_rank, 0);
  t.group = 4;  // a source that says it (xfuser's data-parallel degree) wins
  EXPECT_EQ(parallel_layout(t).group, 4);
}

ModelInfo model() {
  ModelInfo m;
  m.params = 1000000;
  return m;
}

Json one_request(TestEngine& t) {
  {
    RequestScope request(*t.engine, RequestOptions{0, nullptr});
    StageScope s(kTransformer, 1000, 1);
    t.clock->advance(0.1);
  }
  return Json::parse(t.output->records().back());
}

TEST(ParallelLayout, ARequestOfAContextParallelGroupIsPricedAgainstItsDevices) {
  TestEngine t({{"VIDEOX_PERF", "1"}}, true, world(2, 8));
  t.engine->declare_model("transformer", model());
  ParallelSpec spec;
  spec.sp = 4;
  spec.from = {{"cp", "diffusers"}};
  t.engine->set_parallel(spec);
  Json r = one_request(t);
  EXPECT_EQ(r["dit"]["devices"], 4);
  EXPECT_DOUBLE_EQ(r["dit"]["peak_tflops"].get<double>(), 989.0 * 4);
  EXPECT_EQ(r["parallel"], Json::parse(R"({"dp": 2, "dp_replicate": 2, "dp_shard": 1, "cp": 4,
      "tp": 1, "group": 4, "dp_rank": 0, "from": {"cp": "diffusers"}})"));
}

TEST(ParallelLayout, DataParallelRequestsArePricedAgainstOneDevice) {
  TestEngine t({{"VIDEOX_PERF", "1"}}, true, world(1, 8));
  t.engine->declare_model("transformer", model());
  Json r = one_request(t);
  EXPECT_EQ(r["dit"]["devices"], 1);
  EXPECT_EQ(r["parallel"]["dp"], 8);
  EXPECT_EQ(r["parallel"]["dp_rank"], 1);
  EXPECT_EQ(r["parallel"]["from"], Json::object());
}

TEST(ParallelLayout, OneRankRecordsSayNothingOfIt) {
  TestEngine t;
  t.engine->declare_model("transformer", model());
  EXPECT_FALSE(one_request(t).contains("parallel"));
}

TEST(ParallelLayout, TheEnvironmentWinsAndSaysSo) {
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_TP", "2"}, {"VIDEOX_PERF_DP_SHARD", "2"}},
               true, world(0, 8));
  ParallelSpec spec;
  spec.sp = 2;
  spec.tp = 4;
  spec.dp_replicate = 2;
  spec.group = 8;
  spec.from = {{"cp", "accelerate"}, {"tp", "accelerate"}, {"dp_replicate", "accelerate"}};
  t.engine->set_parallel(spec);
  Topology topo = t.engine->topology();
  EXPECT_EQ(topo.tp, 2);
  EXPECT_EQ(topo.sp, 2);
  EXPECT_EQ(topo.dp_shard, 2);
  EXPECT_EQ(topo.dp_replicate, 0);  // follows from the variable's shard count
  EXPECT_EQ(topo.group, 0);         // cp x tp again
  EXPECT_EQ(topo.from, (LayoutSources{{"cp", "accelerate"}, {"tp", "env"}, {"dp_shard", "env"}}));
  EXPECT_EQ(t.engine->dp_degree(), 2);
}

TEST(ParallelLayout, AWindowScalesSamplesByDataParallelRanksAlone) {
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}}, true, world(0, 8));
  ParallelSpec spec;
  spec.tp = 4;
  spec.from = {{"tp", "model"}};
  t.engine->set_parallel(spec);
  Trainer& trainer = t.engine->trainer();
  trainer.register_model(model());
  int opt = 0;
  for (int step = 0; step < 2; ++step) {
    MicroStep micro(&trainer);
    {
      ModelCall fwd(Phase::kForward, 1000, 1, &trainer);
      t.clock->advance(0.5);
    }
    OptimizerStep s(&opt, true, &trainer);
    t.clock->advance(0.1);
  }
  t.engine->shutdown();
  Json w = Json::parse(t.output->records().back());
  EXPECT_EQ(w["throughput"]["dp"], 2);
  EXPECT_EQ(w["throughput"]["devices"], 8);  // a job rate against the job's peak
  EXPECT_EQ(w["parallel"]["tp"], 4);
  EXPECT_EQ(w["parallel"]["group"], 4);
}

TEST(ParallelLayout, RecordsReadBackWithTheirLayout) {
  TestEngine t({{"VIDEOX_PERF", "1"}}, true, world(3, 4));
  t.engine->declare_model("transformer", model());
  ParallelSpec spec;
  spec.sp = 2;
  spec.dp_shard = 2;
  spec.from = {{"cp", "diffusers"}, {"dp_shard", "model"}};
  t.engine->set_parallel(spec);
  one_request(t);
  std::string line = t.output->records().back();
  RequestRecord r = internal::read_request(line);
  ASSERT_TRUE(r.parallel.has_value());
  EXPECT_EQ(r.parallel->group, 2);
  EXPECT_EQ(r.parallel->dp_rank, 1);
  EXPECT_EQ(r.parallel->dp_shard, 2);
  EXPECT_EQ(r.parallel->from, spec.from);
}

TEST(ParallelLayout, ALiveTraceReplaysWithItsLayoutAndItsChanges) {
  std::string dir = ::testing::TempDir() + "vxperf-parallel-layout-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string path = dir + "/trace.jsonl";
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_TRACE", path}}, true, world(0, 2));
  t.engine->declare_model("transformer", model());
  ParallelSpec spec;
  spec.sp = 2;
  spec.from = {{"cp", "xfuser"}};
  t.engine->set_parallel(spec);
  one_request(t);
  spec.sp = 1;
  spec.dp_shard = 2;
  spec.from = {{"dp_shard", "model"}};
  t.engine->set_parallel(spec);  // after the trace's first line: a topology event
  one_request(t);
  t.engine->shutdown();

  auto a = t.output->records();
  ASSERT_EQ(a.size(), 2u);
  testing::expect_replay_reproduces(*t.output, path + ".rank0");
  EXPECT_EQ(Json::parse(a[0])["dit"]["devices"], 2);
  EXPECT_EQ(Json::parse(a[1])["dit"]["devices"], 1);
}

}  // namespace
}  // namespace vxperf
