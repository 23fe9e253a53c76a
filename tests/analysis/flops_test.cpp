// FLOPs of a Wan2.1-style DiT from its dimensions.
#include "vxperf/flops.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "analysis_records.h"
#include "vxperf/event_script.h"
#include "vxperf/vxperf.h"

namespace vxperf::analysis {
namespace {

using Json = nlohmann::json;
using namespace test_records;

TEST(Flops, PresetParameterCountsAreExact) {
  EXPECT_EQ(dit_params(*dit_preset("wan2.1-t2v-1.3b")), 1418996800);
  EXPECT_EQ(dit_params(*dit_preset("wan2.1-t2v-14b")), 14288491584);
  EXPECT_FALSE(dit_preset("wan2.2").has_value());
  EXPECT_EQ(dit_preset_names().size(), 2u);
}

TEST(Flops, Tokens) {
  EXPECT_EQ(dit_tokens(*dit_preset("wan2.1-t2v-14b"), 1280, 720, 81).tokens, 75600);
  LatentShape s = dit_tokens(*dit_preset("wan2.1-t2v-1.3b"), 832, 480, 81);
  EXPECT_EQ(s.frames, 21);
  EXPECT_EQ(s.height, 60);
  EXPECT_EQ(s.width, 104);
  EXPECT_EQ(s.tokens, 32760);
  EXPECT_THROW(dit_tokens(*dit_preset("wan2.1-t2v-14b"), 8, 8, 1), std::invalid_argument);
  EXPECT_THROW(dit_tokens(*dit_preset("wan2.1-t2v-14b"), 0, 720, 81), std::invalid_argument);
}

// Wan2.1's 480p setting: 832x480, 81 frames, 50 steps.
FlopsQuery wan_480p_query() {
  FlopsQuery q;
  q.width = 832;
  q.height = 480;
  q.frames = 81;
  q.steps = 50;
  return q;
}

TEST(Flops, ForwardSplitAndRequest) {
  FlopsQuery q = wan_480p_query();
  q.peak_tflops = 989.0;
  q.mfu = 0.5;
  FlopsEstimate e = estimate_flops(*dit_preset("wan2.1-t2v-1.3b"), q);
  EXPECT_NEAR(e.flops_per_forward / 2.9388e14, 1.0, 1e-4);
  EXPECT_DOUBLE_EQ(e.flops_linear, 2.0 * 1418996800.0 * 32760.0);
  EXPECT_DOUBLE_EQ(e.flops_self_attn, 4.0 * 32760.0 * 32760.0 * 30 * 1536);
  EXPECT_DOUBLE_EQ(e.flops_cross_attn, 4.0 * 32760.0 * 512 * 30 * 1536);
  EXPECT_NEAR(e.flops_linear + e.flops_self_attn + e.flops_cross_attn, e.flops_per_forward, 1e3);
  EXPECT_NEAR(e.attention_share, (e.flops_self_attn + e.flops_cross_attn) / e.flops_per_forward,
              1e-12);
  EXPECT_EQ(e.forwards_per_request, 100);  // CFG doubles the forwards
  EXPECT_DOUBLE_EQ(e.flops_per_request, e.flops_per_forward * 100);
  ASSERT_TRUE(e.ideal_s && e.at_mfu_s);
  EXPECT_NEAR(*e.ideal_s, e.flops_per_request / 989e12, 1e-9);
  EXPECT_NEAR(*e.at_mfu_s, *e.ideal_s * 2, 1e-9);

  Json j = Json::parse(flops_json(*dit_preset("wan2.1-t2v-1.3b"), q, e));
  for (const char* key : {"params", "tokens", "flops_per_forward", "attention_share"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["params"], 1418996800);
  EXPECT_EQ(j["tokens"], 32760);

  q.cfg = false;
  q.batch = 2;
  q.peak_tflops.reset();
  e = estimate_flops(*dit_preset("wan2.1-t2v-1.3b"), q);
  EXPECT_EQ(e.forwards_per_request, 100);
  EXPECT_FALSE(e.ideal_s.has_value());
}

TEST(Flops, DensityAndSkipRatioPriceExactly) {
  FlopsQuery q = wan_480p_query();
  FlopsEstimate full = estimate_flops(*dit_preset("wan2.1-t2v-1.3b"), q);
  q.density = 0.5;
  q.skip_ratio = 0.3;
  FlopsEstimate e = estimate_flops(*dit_preset("wan2.1-t2v-1.3b"), q);
  EXPECT_EQ(e.flops_linear, full.flops_linear);
  EXPECT_EQ(e.flops_self_attn, full.flops_self_attn * 0.5);
  EXPECT_EQ(e.flops_cross_attn, full.flops_cross_attn);  // against the text: dense
  EXPECT_EQ(e.forwards_per_request, 100);
  EXPECT_EQ(e.computed_forwards, 100 * (1.0 - 0.3));
  EXPECT_EQ(e.flops_per_request, e.flops_per_forward * e.computed_forwards);
  Json j = Json::parse(flops_json(*dit_preset("wan2.1-t2v-1.3b"), q, e));
  EXPECT_EQ(j["attn_density"], 0.5);
  EXPECT_EQ(j["skip_ratio"], 0.3);
  EXPECT_EQ(j["dtype"], "bf16");
}

}  // namespace
}  // namespace vxperf::analysis
