// Window aggregation and pricing, as pure functions: no trainer, no engine, no clock.
#include "training/window.h"

#include <gtest/gtest.h>

#include <cstring>

#include "pricing/pricing.h"
#include "vxperf/training.h"

namespace vxperf::internal {
namespace {

StepRecord step(std::int64_t index, double total_s, std::optional<std::int64_t> tokens,
                std::int64_t samples, bool warmup = false) {
  StepRecord s;
  s.step = index;
  s.warmup = warmup;
  s.total_s = total_s;
  s.micro_steps = 2;
  s.phases = {{phase_name(Phase::kForward), total_s * 0.25},
              {phase_name(Phase::kBackward), total_s * 0.5},
              {phase_name(Phase::kOther), total_s * 0.25}};
  s.tokens = tokens;
  s.samples = samples;
  return s;
}

WindowContext context() {
  WindowContext c;
  c.rank = 1;
  c.world_size = 4;
  c.dp = 2;
  c.model.params = 1000000;
  c.model.trainable = 1000000;
  c.peak_tflops = [](Dtype) { return ResolvedPeak{100.0, PeakSource::kTable}; };
  return c;
}

const double* phase_of(const TrainWindowRecord& r, const char* name) {
  for (const auto& [n, v] : r.phases_s) {
    if (n == name) return &v;
  }
  return nullptr;
}

TEST(Window, WarmupStepsAreLeftOutUnlessTheyAreAll) {
  std::vector<StepRecord> steps = {step(0, 9.0, 100, 1, true), step(1, 1.0, 100, 1),
                                   step(2, 3.0, 100, 1)};
  TrainWindowRecord r = aggregate_window(steps, context());
  EXPECT_EQ(r.step_first, 0);
  EXPECT_EQ(r.step_last, 2);
  EXPECT_EQ(r.steps, 2);
  EXPECT_EQ(r.warmup_excluded, 1);
  EXPECT_DOUBLE_EQ(r.step_s_p50, 2.0);
  EXPECT_DOUBLE_EQ(r.step_s_p95, 2.9);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, 4);

  std::vector<StepRecord> all_warmup = {step(0, 1.0, 100, 1, true), step(1, 3.0, 100, 1, true)};
  TrainWindowRecord w = aggregate_window(all_warmup, context());
  EXPECT_EQ(w.steps, 2);
  EXPECT_EQ(w.warmup_excluded, 0);
  EXPECT_DOUBLE_EQ(w.step_s_p50, 2.0);
}

TEST(Window, PhasesAreMeansInTheFixedOrderAndZeroPhasesAreLeftOut) {
  std::vector<StepRecord> steps = {step(0, 2.0, 100, 1), step(1, 4.0, 100, 1)};
  steps[1].phases.insert(steps[1].phases.begin(), {phase_name(Phase::kData), 0.5});
  TrainWindowRecord r = aggregate_window(steps, context());
  ASSERT_EQ(r.phases_s.size(), 4u);
  EXPECT_EQ(r.phases_s[0].first, "data");        // data comes first, whatever order the step had
  EXPECT_DOUBLE_EQ(r.phases_s[0].second, 0.25);  // 0 and 0.5
  EXPECT_DOUBLE_EQ(*phase_of(r, "fwd"), 0.75);
  EXPECT_DOUBLE_EQ(*phase_of(r, "bwd"), 1.5);
  EXPECT_EQ(phase_of(r, "opt"), nullptr);
  EXPECT_DOUBLE_EQ(r.micro_steps, 2.0);
}

TEST(Window, RatesAreSumsOverSumsAndUnpricedStepsAddNeitherWorkNorTime) {
  // Step 0: 1000 tokens, 2 samples, 1 s. Step 1: 4000 tokens, 1 sample, 3 s. Step 2: no tokens.
  std::vector<StepRecord> steps = {step(0, 1.0, 1000, 2), step(1, 3.0, 4000, 1),
                                   step(2, 6.0, std::nullopt, 4)};
  TrainWindowRecord r = aggregate_window(steps, context());
  ASSERT_TRUE(r.throughput);
  const TrainThroughput& t = *r.throughput;
  EXPECT_DOUBLE_EQ(t.wall_s, 10.0);
  EXPECT_DOUBLE_EQ(t.samples_per_s, 7.0 / 10.0);
  EXPECT_EQ(t.dp, 2);
  ASSERT_TRUE(t.priced);
  EXPECT_EQ(t.priced_steps, 2);
  EXPECT_DOUBLE_EQ(t.priced_s, 4.0);
  // Linear only (no widths): 3x of 2*P*T per sample.
  double flops = 3.0 * (2.0 * 1e6 * 1000 * 2 + 2.0 * 1e6 * 4000 * 1);
  EXPECT_DOUBLE_EQ(t.flops_per_step, flops / 2);
  EXPECT_DOUBLE_EQ(t.tflops, flops * 2 / 4.0 / 1e12);  // job rate: times dp
  EXPECT_EQ(t.devices, 4);
  ASSERT_TRUE(t.peak_tflops);
  EXPECT_DOUBLE_EQ(*t.peak_tflops, 400.0);
  EXPECT_DOUBLE_EQ(*t.mfu, t.tflops / 400.0);
  EXPECT_DOUBLE_EQ(t.tokens, 2500.0);
  EXPECT_NE(t.flops_coef_reason.find("full, ckpt off -> 3x/3x"), std::string::npos);
  EXPECT_DOUBLE_EQ(t.samples, 7.0 / 3.0);
}

TEST(Window, NoModelMeansNoPricingAndTotalStepsGiveAnEta) {
  WindowContext c = context();
  c.model.params = 0;
  c.total_steps = 10;
  std::vector<StepRecord> steps = {step(3, 2.0, 100, 1), step(4, 2.0, 100, 1)};
  TrainWindowRecord r = aggregate_window(steps, c);
  ASSERT_TRUE(r.throughput);
  EXPECT_FALSE(r.throughput->priced);
  ASSERT_TRUE(r.eta_s);
  EXPECT_DOUBLE_EQ(*r.eta_s, 5 * 2.0);  // steps 5..9 remain
}

// A transformer of 1000 parameters (self and cross attention 10 wide, 2 modules, 5 text tokens)
// called `calls` times over `total_ms`, 100 tokens a sample and `batch` samples a call.
PricedStage called_dit(std::int64_t calls, double total_ms, std::int64_t batch = 1) {
  PricedStage dit;
  dit.params = 1000;
  dit.attention = AttentionWidths{10, 10, 2};
  dit.text_tokens = 5;
  dit.called = true;
  dit.tokens = 100;
  dit.batch = batch;
  dit.calls = calls;
  dit.total_ms = total_ms;
  return dit;
}

// One full forward of a sample through called_dit: its attention, and all of it.
constexpr double kDitAttention = 4.0 * 100 * 100 * 10 + 4.0 * 100 * 5 * 10;
constexpr double kDitPerForward = 2.0 * 1000 * 100 + kDitAttention;

TEST(Pricing, RequestIsAJobRateOverTheTransformerCalls) {
  PricedStage dit = called_dit(4, 2000, 2);
  PricedStage idle;  // declared, never called: counted in params only
  idle.params = 500;
  bool asked = false;
  auto d = price_request({dit, idle}, 8, std::nullopt, [&](Dtype) {
    asked = true;
    return ResolvedPeak{10.0, PeakSource::kTable};
  });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->params, 1500);
  EXPECT_DOUBLE_EQ(d->flops_per_fwd, kDitPerForward * 2);  // batch 2 per call
  EXPECT_DOUBLE_EQ(d->attn_share, kDitAttention / kDitPerForward);
  EXPECT_DOUBLE_EQ(d->tflops, kDitPerForward * 2 * 4 / 2.0 / 1e12);
  EXPECT_EQ(d->devices, 8);
  EXPECT_TRUE(asked);
  EXPECT_DOUBLE_EQ(*d->peak_tflops, 80.0);

  PricedStage no_tokens = dit;
  no_tokens.tokens = 0;
  asked = false;
  EXPECT_FALSE(price_request({no_tokens}, 1, std::nullopt, [&](Dtype) {
    asked = true;
    return ResolvedPeak{};
  }));
  EXPECT_FALSE(asked);  // the device is not asked for a peak when nothing was priced
  // Nothing beyond the reference's fields when every call was full and the peak the table's.
  EXPECT_FALSE(d->skipped_fwd);
  EXPECT_FALSE(d->effective_fwd);
  EXPECT_EQ(d->peak_source, PeakSource::kTable);
  EXPECT_EQ(d->dtype, Dtype::kBf16);
}

TEST(Pricing, SkippedAndPartialCallsArePricedAtTheirFraction) {
  // 10 calls of batch 2 over 1000 ms: 6 full, 3 skipped (cache hits), 1 at a quarter.
  PricedStage dit = called_dit(10, 1000, 2);
  dit.groups = {CallGroup{100, 2, 10, 6.25}};
  dit.skipped_calls = 3;
  auto d = price_request({dit}, 1, std::nullopt, [](Dtype) {
    return ResolvedPeak{1.0, PeakSource::kMeasured};
  });
  ASSERT_TRUE(d);
  // The time of every call counts; the work only of what was computed.
  EXPECT_EQ(d->tflops, kDitPerForward * 2 * 6.25 / 1.0 / 1e12);
  EXPECT_EQ(d->flops_per_fwd, kDitPerForward * 2);  // a full forward's cost, as without skipping
  EXPECT_DOUBLE_EQ(d->attn_share, kDitAttention / kDitPerForward);
  EXPECT_EQ(d->skipped_fwd, 3);
  EXPECT_EQ(d->effective_fwd, 6.25);
  EXPECT_EQ(d->mfu, d->tflops / 1.0);
  EXPECT_EQ(d->peak_source, PeakSource::kMeasured);

  // Every call skipped: timed, priced at nothing.
  dit.groups = {CallGroup{100, 2, 10, 0.0}};
  dit.skipped_calls = 10;
  auto none = price_request({dit}, 1, std::nullopt, [](Dtype) { return ResolvedPeak{}; });
  ASSERT_TRUE(none);
  EXPECT_EQ(none->tflops, 0.0);
  EXPECT_EQ(none->skipped_fwd, 10);
  EXPECT_EQ(none->effective_fwd, 0.0);
}

TEST(Pricing, EachCallIsPricedAtItsOwnLengthAndRows) {
  // 4 calls over 1000 ms: 2 full ones of 100 tokens x 2 rows, one of 50 tokens x 2 rows that ran
  // its blocks on half of them, one of 100 tokens x 1 row.
  PricedStage dit = called_dit(4, 1000, 2);
  dit.groups = {CallGroup{100, 2, 2, 2.0}, CallGroup{50, 2, 1, 0.5}, CallGroup{100, 1, 1, 1.0}};
  auto d = price_request({dit}, 1, std::nullopt, [](Dtype) {
    return ResolvedPeak{1.0, PeakSource::kTable};
  });
  ASSERT_TRUE(d);
  const double short_attention = 4.0 * 50 * 50 * 10 + 4.0 * 50 * 5 * 10;
  const double short_forward = 2.0 * 1000 * 50 + short_attention;
  const double work = kDitPerForward * 2 * 2 + short_forward * 2 * 0.5 + kDitPerForward * 1;
  EXPECT_DOUBLE_EQ(d->tflops, work / 1.0 / 1e12);
  // Calls of different sizes, one cut short: a forward's cost is the mean of the work that ran,
  // so that flops_per_fwd x effective_fwd is the request's FLOPs.
  EXPECT_DOUBLE_EQ(d->flops_per_fwd, work / 3.5);
  EXPECT_DOUBLE_EQ(d->flops_per_fwd * *d->effective_fwd, work);
  EXPECT_DOUBLE_EQ(d->attn_share,
                   (kDitAttention * 2 * 2 + short_attention * 2 * 0.5 + kDitAttention) / work);
  EXPECT_EQ(d->tokens, 100);  // the longest
  EXPECT_EQ(d->batch, 2);
  EXPECT_EQ(*d->effective_fwd, 3.5);
  EXPECT_EQ(*d->skipped_fwd, 0);
}

TEST(Pricing, ExpertsOfDifferentSizesAddUp) {
  // Wan2.2's two experts switched by timestep, the second smaller (a third of the parameters)
  // and cut short: 3 full calls of the first, 2 of the second of which one skipped and one ran
  // half its blocks; 100 ms a call.
  PricedStage high = called_dit(3, 300);
  PricedStage low = called_dit(2, 200);
  low.params = 333;
  low.groups = {CallGroup{100, 1, 2, 0.5}};
  low.skipped_calls = 1;
  auto d = price_request({high, low}, 1, std::nullopt, [](Dtype) { return ResolvedPeak{}; });
  ASSERT_TRUE(d);
  const double small = 2.0 * 333 * 100 + kDitAttention;
  const double work = kDitPerForward * 3 + small * 0.5;
  EXPECT_DOUBLE_EQ(d->tflops, work / 0.5 / 1e12);
  EXPECT_EQ(*d->effective_fwd, 3.5);
  EXPECT_EQ(*d->skipped_fwd, 1);
  // The request's FLOPs, whichever expert the calls went to: a forward's cost is the mean of
  // the work that ran (the first expert's 3 calls weigh 3 to the second's half).
  EXPECT_DOUBLE_EQ(d->flops_per_fwd * *d->effective_fwd, work);
  EXPECT_DOUBLE_EQ(d->flops_per_fwd, work / 3.5);
  EXPECT_DOUBLE_EQ(d->attn_share, kDitAttention * 3.5 / work);
  // Both full: the mean of a full forward over the calls made, as the reference has it.
  low.groups.clear();
  low.skipped_calls = 0;
  auto full = price_request({high, low}, 1, std::nullopt, [](Dtype) { return ResolvedPeak{}; });
  ASSERT_TRUE(full);
  EXPECT_DOUBLE_EQ(full->flops_per_fwd, (kDitPerForward * 3 + small * 2) / 5);
  EXPECT_FALSE(full->effective_fwd);
}

TEST(Pricing, APartialForwardPricesItsAttentionAtWhatRanOfIt) {
  // A cache that skipped the main blocks and ran side blocks of other widths: half the forward's
  // FLOPs ran, but a fifth of its attention products' (the side blocks are mostly linear work).
  PricedStage dit = called_dit(2, 200);
  dit.groups = {CallGroup{100, 1, 2, 1.5, 1.2}};
  auto d = price_request({dit}, 1, std::nullopt, [](Dtype) { return ResolvedPeak{}; });
  ASSERT_TRUE(d);
  const double work = kDitPerForward * 1.5;
  EXPECT_DOUBLE_EQ(d->tflops, work / 0.2 / 1e12);  // the total as the fraction says
  EXPECT_DOUBLE_EQ(d->attn_share, kDitAttention * 1.2 / work);
  EXPECT_EQ(*d->effective_fwd, 1.5);
}

TEST(Pricing, AttentionDensityAndDtypeReachThePrice) {
  PricedStage dit = called_dit(1, 1000);
  dit.attn_density = 0.5;
  dit.dtype = Dtype::kFp32;
  Dtype asked_for = Dtype::kBf16;
  auto d = price_request({dit}, 1, std::nullopt, [&](Dtype dtype) {
    asked_for = dtype;
    return ResolvedPeak{2.0, PeakSource::kTable};
  });
  ASSERT_TRUE(d);
  double self = 4.0 * 100 * 100 * 10 * 0.5;
  double cross = 4.0 * 100 * 5 * 10;
  EXPECT_EQ(d->flops_per_fwd, 2.0 * 1000 * 100 + self + cross);
  EXPECT_EQ(d->attn_density, 0.5);
  EXPECT_EQ(asked_for, Dtype::kFp32);  // the model's dtype picks the peak
  EXPECT_EQ(d->dtype, Dtype::kFp32);
  // VIDEOX_PERF_DTYPE wins over the model.
  auto o = price_request({dit}, 1, Dtype::kFp8, [&](Dtype dtype) {
    asked_for = dtype;
    return ResolvedPeak{};
  });
  EXPECT_EQ(asked_for, Dtype::kFp8);
  EXPECT_EQ(o->dtype, Dtype::kFp8);
  EXPECT_FALSE(o->mfu);  // an unknown combination: no MFU rather than a guess
}

TEST(Window, PartialForwardsPriceTheirFractionAndKeepTheirSamples) {
  // Step 0: 2 forwards of 1 sample, one full, one skipped. Step 1: one full forward of 2 samples.
  std::vector<StepRecord> steps = {step(0, 1.0, 1000, 2), step(1, 1.0, 1000, 2)};
  steps[0].fwd_calls = 2;
  steps[0].effective_fwd = 1.0;
  steps[0].effective_samples = 1.0;
  steps[0].skipped_fwd = 1;
  steps[1].fwd_calls = 1;
  steps[1].effective_fwd = 1.0;
  steps[1].effective_samples = 2.0;
  TrainWindowRecord r = aggregate_window(steps, context());
  const TrainThroughput& t = *r.throughput;
  EXPECT_DOUBLE_EQ(t.samples_per_s, 4.0 / 2.0);  // consumed samples, skipped or not
  double flops = 3.0 * (2.0 * 1e6 * 1000 * 1 + 2.0 * 1e6 * 1000 * 2);
  EXPECT_EQ(t.flops_per_step, flops / 2);
  EXPECT_EQ(t.skipped_fwd, 1);
  EXPECT_EQ(t.effective_fwd, 2.0);
  // Without partial forwards, neither field.
  TrainWindowRecord full = aggregate_window({step(0, 1.0, 1000, 2)}, context());
  EXPECT_FALSE(full.throughput->skipped_fwd);
  EXPECT_FALSE(full.throughput->effective_fwd);
}

}  // namespace
}  // namespace vxperf::internal
