// `vxperf explain --replay` and `--what-if`: vxperf's own graph of what ran, replayed, on traces
// built here, each replay, critical path and what-if worked out by hand in the comments. The
// situations: a sync that makes the host wait, a sync waiting for its stream only, a kernel on
// another stream joined by an event, an event on the stream it waits on, a launch queued behind a
// long kernel, a data-loader stall, NCCL overlapping compute, the autograd thread's launches,
// denoising steps skipped; then the checked-in waterfall trace with its records (every what-if,
// FLOPs included), the option's absence, and the what-if specs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "explain/kineto_trace.h"
#include "explain/replay_graph.h"
#include "kineto_builder.h"
#include "test_dir.h"
#include "vxperf/explain.h"

namespace vxperf::explain {
namespace {

namespace fs = std::filesystem;

using Path = std::map<std::string, double>;  // bound -> us

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::fresh_test_dir("vxperf-replay"); }
  void TearDown() override { fs::remove_all(dir_); }

  // Request 0 [0,1000] with three transformer calls (its denoising steps) [0,100], [100,200],
  // [200,300], each launching (at +5, 5 us) one gemm at +10 for 80 us.
  static Kineto three_denoising_steps() {
    Kineto t;
    t.event("user_annotation", "request 0", 1, 1, 0, 1000);
    for (int i = 0; i < 3; ++i) {
      const double at = 100.0 * i;
      t.event("user_annotation", "transformer", 1, 1, at, 100);
      t.launch(at + 5, 5, i + 1).kernel("gemm", 7, at + 10, 80, i + 1);
    }
    return t;
  }

  // Replays the trace with the what-ifs given (specs) and returns the rank's replay; with
  // `critical_path`, HTA's too (every row then read whole).
  RankReplay run(const Kineto& k, const std::vector<std::string>& what_ifs = {},
                 bool critical_path = false) {
    const std::string file = (dir_ / "trace.json").string();
    std::ofstream(file) << k.text();
    ExplainOptions options;
    options.threads = 1;
    options.records = {"/dev/null"};
    ReplayRequest r;
    for (const std::string& s : what_ifs) r.what_ifs.push_back(parse_what_if(s));
    options.replay = r;
    if (critical_path) options.critical_path = CriticalPathRequest{};
    const Explanation e = explain_traces({file}, options);
    EXPECT_EQ(e.ranks.size(), 1u);
    if (e.ranks.empty() || !e.ranks[0].replay) return {};
    return *e.ranks[0].replay;
  }

  fs::path dir_;
};

const ReplayRow& row(const RankReplay& r, const std::string& range, std::int64_t index = -1) {
  for (const ReplayRow& w : r.rows) {
    if (w.range == range && w.step_index == index) return w;
  }
  throw std::runtime_error("no row " + range);
}

// The row's replayed span equals the measured one (us), its critical path is `path` (us).
void expect_replay(const ReplayRow& w, double span_us, const Path& path) {
  EXPECT_DOUBLE_EQ(w.span_s * 1e6, span_us) << w.range;
  EXPECT_NEAR(w.replayed_s * 1e6, span_us, 1e-6) << w.range;
  EXPECT_LT(w.error_pct, 1e-9) << w.range;
  Path got;
  for (const auto& [b, s] : w.path_s) {
    if (std::abs(s) > 1e-12) got[b] = std::round(s * 1e9) / 1e3;
  }
  EXPECT_EQ(got, path) << w.range;
}

const WhatIfResult& what_if(const RankReplay& r, const std::string& spec) {
  for (const WhatIfResult& w : r.what_ifs) {
    if (w.what_if == spec) return w;
  }
  throw std::runtime_error("no what-if " + spec);
}

// The predicted span of the requests and steps (us) and the gain.
void expect_what_if(const RankReplay& r, const std::string& spec, double was_us, double now_us) {
  const WhatIfResult& w = what_if(r, spec);
  EXPECT_TRUE(w.applies) << spec << ": " << w.why;
  EXPECT_NEAR(w.span_s * 1e6, was_us, 1e-6) << spec;
  EXPECT_NEAR(w.predicted_s * 1e6, now_us, 1e-6) << spec;
  EXPECT_NEAR(w.gain_s * 1e6, was_us - now_us, 1e-6) << spec;
}

TEST_F(ReplayTest, ASyncThatMakesTheHostWait) {
  // request 0 [0,600]; aten::mm [10,40] launching ([20,30]) gemm (stream 7, [50,450]); aten::item
  // [60,500] around cudaStreamSynchronize [70,460] (no cuda_sync event: it waits for what was
  // launched before it, the gemm); aten::add [510,530] launching ([515,525]) add [540,560].
  Kineto t;
  t.event("user_annotation", "request 0", 1, 1, 0, 600);
  t.op("aten::mm", 10, 30).launch(20, 10, 1).kernel("gemm", 7, 50, 400, 1);
  t.op("aten::item", 60, 440).runtime("cudaStreamSynchronize", 70, 390, 2);
  t.op("aten::add", 510, 20).launch(515, 10, 3).kernel("add", 7, 540, 20, 3);
  const RankReplay r = run(t, {"host", "kernel:^gemm$=0.5", "comm", "copies"});
  EXPECT_EQ(r.largest_error_pct, 0);
  // The span: 50 -> 560. The path back from add's end: add 20; its launch (at 515, after the
  // gemm ended at 450: the launch is the later cause) 25; aten::add 5 before the call; the host's
  // gap 10 (inside the request only); aten::item after the sync returned 40; the sync's return
  // 10 after the gemm ended (460 - 450: the sync waited 380 us, which is the gemm's time); the
  // gemm 400 back to the span's start.
  expect_replay(row(r, "request"), 510,
                {{"gpu_compute", 420}, {"sync_wait", 10}, {"host", 55}, {"launch_overhead", 25}});
  // host: every host edge 0, a launch keeps its delay less its call's 10 us. gemm starts at
  // 0 + 20, ends 420; the sync returns 10 later (430); aten::add, its launch at 430; add at
  // 430 + 15 = 445, ends 465. 20 -> 465 = 445.
  expect_what_if(r, "host", 510, 445);
  // gemm at half: [50,250]; the sync returns at 260, aten::item ends 300, aten::add starts 310,
  // its launch 315, add at 340 -> 360: 310.
  expect_what_if(r, "kernel:^gemm$=0.5", 510, 310);
  expect_what_if(r, "comm", 510, 510);
  expect_what_if(r, "copies", 510, 510);
  // Ranked by gain: the gemm first.
  ASSERT_EQ(r.ranked.size(), 4u);
  EXPECT_EQ(r.what_ifs[r.ranked[0]].what_if, "kernel:^gemm$=0.5");
  EXPECT_EQ(r.what_ifs[r.ranked[1]].what_if, "host");
}

// k7 (stream 7, [20,100], launched [10,15]) and k20 (stream 20, [22,125], launched [16,20]);
// cudaStreamSynchronize [30,130] (with its Stream Sync event on stream 7, or without); aten::add
// [140,150] launching ([141,145]) add (stream 7, [150,160]).
Kineto sync_on_one_stream(bool event) {
  Kineto t;
  t.event("user_annotation", "request 0", 1, 1, 0, 1000);
  t.launch(10, 5, 1).kernel("k7", 7, 20, 80, 1).launch(16, 4, 2).kernel("k20", 20, 22, 103, 2);
  t.runtime("cudaStreamSynchronize", 30, 100, 3);
  if (event) t.sync("Stream Sync", 7, 30, 100, 3);
  t.op("aten::add", 140, 10).launch(141, 4, 4).kernel("add", 7, 150, 10, 4);
  return t;
}

TEST_F(ReplayTest, ASyncWaitsForItsStreamOnly) {
  // With the event the sync waited for stream 7 (k7, ended 100): it returned 30 later. The path
  // back from add's end: add 10, its launch 9 (at 141, after k7's end), aten::add 1, the host's
  // gap 10, the sync's return 30, k7 80 back to the span's start (20).
  RankReplay r = run(sync_on_one_stream(true), {"kernel:k20=2"});
  EXPECT_EQ(r.largest_row_error_us, 0);
  expect_replay(row(r, "request"), 140,
                {{"gpu_compute", 90}, {"launch_overhead", 9}, {"host", 11}, {"sync_wait", 30}});
  // k20 twice as long ([22,228]) delays nothing on the host: the span is k20's, 20 -> 228.
  expect_what_if(r, "kernel:k20=2", 140, 208);
  // Without it, the sync waited for everything launched before it: the latest end before it
  // returned is k20's (125), 5 us before. The path goes through k20 (103) and its launch's 2 us
  // after 20.
  r = run(sync_on_one_stream(false), {"kernel:k20=2"});
  EXPECT_EQ(r.largest_row_error_us, 0);
  expect_replay(row(r, "request"), 140,
                {{"gpu_compute", 113}, {"launch_overhead", 11}, {"host", 11}, {"sync_wait", 5}});
  // k20 twice as long now holds the host: the sync returns at 233, add ends at 263: 243.
  expect_what_if(r, "kernel:k20=2", 140, 243);
}

TEST_F(ReplayTest, AKernelOnAnotherStreamJoinedByAnEvent) {
  // launch [10,20] -> gemm_a (stream 7, [30,230]); cudaEventRecord [25,30] after it;
  // cudaStreamWaitEvent [35,40] with its cuda_sync marker (Stream Wait Event on stream 20, on
  // stream 7's record); launch [45,55] -> gemm_b (stream 20, [240,300]): it waits for gemm_a.
  Kineto t;
  t.event("user_annotation", "request 0", 1, 1, 0, 1000);
  t.launch(10, 10, 1).kernel("gemm_a", 7, 30, 200, 1);
  t.runtime("cudaEventRecord", 25, 5, 2).runtime("cudaStreamWaitEvent", 35, 5, 3);
  t.sync("Stream Wait Event", 20, 36, 2, 3, 7, 2);
  t.launch(45, 10, 4).kernel("gemm_b", 20, 240, 60, 4);
  const RankReplay r = run(t, {"kernel:gemm_a=0.5"});
  // The span 30 -> 300 (the marker [36,38] is the request's too). gemm_b's later cause is the
  // event (gemm_a's end at 230, after its launch at 45): 10 us of the device's own.
  expect_replay(row(r, "request"), 270, {{"gpu_compute", 260}, {"device_idle", 10}});
  // gemm_a at half ends at 130; gemm_b starts 10 later, at 140 (its launch allows 55): ends 200.
  expect_what_if(r, "kernel:gemm_a=0.5", 270, 170);
}

TEST_F(ReplayTest, AnEventOnTheStreamItWaitsOn) {
  // k1 (stream 7, [30,80], launched [10,20]); an event recorded after it and waited on by stream
  // 7 itself; k2 launched [40,50] (before k1 ended) starts at 150. The event's edge and the
  // stream's join the same two nodes: one edge, the stream's, carrying the 70 us (the event's
  // least, 0, must not replace it: the replay would start k2 at 80).
  Kineto t;
  t.event("user_annotation", "request 0", 1, 1, 0, 1000);
  t.launch(10, 10, 1).kernel("k1", 7, 30, 50, 1);
  t.runtime("cudaEventRecord", 22, 2, 2).runtime("cudaStreamWaitEvent", 25, 5, 3);
  t.sync("Stream Wait Event", 7, 26, 1, 3, 7, 2);
  t.launch(40, 10, 4).kernel("k2", 7, 150, 20, 4);
  const RankReplay r = run(t);
  EXPECT_EQ(r.largest_row_error_us, 0);
  // The span: the marker [26,27] (the request's too) to k2's end, 144; back from there k2 20,
  // the stream's 70, k1 50, and k1's launch delay after 26: 4.
  expect_replay(row(r, "request"), 144,
                {{"gpu_compute", 70}, {"device_idle", 70}, {"launch_overhead", 4}});
}

TEST_F(ReplayTest, ALaunchQueuedBehindALongKernel) {
  // aten::mm [5,40] launches [10,20] and [25,35]: gemm_long [40,540] and gemm_next [545,565] on
  // stream 7. gemm_next's later cause is its stream (540, after its launch at 25): 5 us idle.
  Kineto t;
  t.event("user_annotation", "request 0", 1, 1, 0, 2000);
  t.op("aten::mm", 5, 35).launch(10, 10, 1).launch(25, 10, 2);
  t.kernel("gemm_long", 7, 40, 500, 1).kernel("gemm_next", 7, 545, 20, 2);
  const RankReplay r = run(t, {"host", "kernel:gemm_long=0.5"});
  expect_replay(row(r, "request"), 525, {{"gpu_compute", 520}, {"device_idle", 5}});
  // host: gemm_long at 0 + (30 - 10) = 20, ends 520, gemm_next 525 -> 545: 525, nothing gained
  // (the device is the bound).
  expect_what_if(r, "host", 525, 525);
  // gemm_long at half ends 290, gemm_next at 295 (its launch allows 25 + 10) -> 315: 275.
  expect_what_if(r, "kernel:gemm_long=0.5", 525, 275);
}

TEST_F(ReplayTest, ADataLoaderStallIsOnThePath) {
  // step 0 [0,3000]: a launch [2,4] of k0 [5,8]; the loader's range [10,1010] around aten::stack
  // [900,1000]; aten::mm [1100,1150] launching ([1110,1120]) gemm [1130,1330].
  Kineto t;
  t.event("user_annotation", "step 0", 1, 1, 0, 3000);
  t.launch(2, 2, 1).kernel("k0", 7, 5, 3, 1);
  t.event("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1, 1,
          10, 1000);
  t.op("aten::stack", 900, 100).op("aten::mm", 1100, 50).launch(1110, 10, 2);
  t.kernel("gemm", 7, 1130, 200, 2);
  const RankReplay r = run(t, {"host"});
  // The span 5 -> 1330. Back from gemm's end: gemm 200, its launch 20, aten::mm 10 before the
  // call, the host's gap after the loader 90, the loader 1000 (its 890 us in Python, aten::stack
  // 100, 10 after), the host's 5 us from k0's start to the loader's.
  expect_replay(
      row(r, "step"), 1325,
      {{"gpu_compute", 200}, {"launch_overhead", 20}, {"host", 105}, {"data_loading", 1000}});
  // host: the loader's 1000 us stay. k0 at 0 + (3 - 2) = 1; the loader ends at 1000; gemm at
  // 1000 + (20 - 10) = 1010 -> 1210: 1 -> 1210 = 1209.
  expect_what_if(r, "host", 1325, 1209);
}

TEST_F(ReplayTest, NcclOverlappingCompute) {
  // NCCL on stream 20 [30,330] (launched [10,20]); a gemm on stream 7 [60,260] (launched [40,50])
  // and gemm2 [290,310] (launched [270,280]).
  Kineto t;
  t.event("user_annotation", "request 0", 1, 1, 0, 1000);
  t.launch(10, 10, 1).kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 20, 30, 300, 1);
  t.launch(40, 10, 2).kernel("gemm", 7, 60, 200, 2);
  t.launch(270, 10, 3).kernel("gemm2", 7, 290, 20, 3);
  const RankReplay r = run(t, {"comm"});
  expect_replay(row(r, "request"), 300, {{"gpu_communication", 300}});
  // comm: the collective weighs nothing and no longer bounds the span; the gemms' 60 -> 310 =
  // 250, above the device-busy bound (stream 7: 220).
  expect_what_if(r, "comm", 300, 250);
}

TEST_F(ReplayTest, TheAutogradThreadsLaunches) {
  // Thread 1: step 0 [0,600], "## forward ##" [5,100] around aten::mm [10,40] launching
  // ([20,30]) fwd_gemm [35,135]; thread 2 (no ranges: a worker) MmBackward0 [200,300] launching
  // ([210,220]) bwd_gemm [230,430] (and a hook's range [205,207]); thread 1 Optimizer.step
  // [500,520].
  Kineto t;
  t.event("user_annotation", "step 0", 1, 1, 0, 600);
  t.event("user_annotation", "## forward ##", 1, 1, 5, 95);
  t.op("aten::mm", 10, 30).launch(20, 10, 1).kernel("fwd_gemm", 7, 35, 100, 1);
  t.op("MmBackward0", 200, 100, 2).launch(210, 10, 2, 2).kernel("bwd_gemm", 7, 230, 200, 2);
  // A hook's range on the autograd thread does not make it a thread of vxperf's ranges.
  t.event("user_annotation", "DistributedDataParallel.reducer", 1, 2, 205, 2);
  t.op("Optimizer.step", 500, 20);
  const RankReplay r = run(t, {"host"});
  // The span 35 -> 430. Back from bwd_gemm's end: 200; its launch 20 (at 210, after fwd_gemm's
  // end); MmBackward0 10 before the call; the worker fed by thread 1's latest point before it
  // (the forward's end at 100): 100; the forward after aten::mm 60; aten::mm's 5 us after 35.
  expect_replay(row(r, "step"), 395,
                {{"gpu_compute", 200}, {"launch_overhead", 20}, {"host", 175}});
  // host: fwd_gemm at 0 + 5, ends 105; bwd_gemm's launch at 0 + 10, its stream free at 105:
  // [105,305]. 5 -> 305 = 300, the device-busy bound.
  expect_what_if(r, "host", 395, 300);
}

TEST_F(ReplayTest, DenoisingStepsSkipped) {
  // request 0 [0,1000] with three transformer calls (its denoising steps) [0,100], [100,200],
  // [200,300], each launching (at +5, 5 us) one gemm at +10 for 80 us.
  const Kineto t = three_denoising_steps();
  const RankReplay r = run(t, {"steps:1", "steps:5"});
  // The request: 10 -> 290; back from the last gemm: 80, its launch 5, the host 190 and the
  // launch calls 10 of the calls before it (the first gemm's start is the span's).
  expect_replay(row(r, "request"), 280,
                {{"gpu_compute", 80}, {"host", 190}, {"launch_overhead", 10}});
  expect_replay(row(r, "transformer", 1), 80, {{"gpu_compute", 80}});
  // steps:1 skips step 1 (of 3: 1 * 3 / 2): its host time and its gemm weigh nothing; step 2
  // starts at 100, its gemm at 110 -> 190: 10 -> 190 = 180.
  expect_what_if(r, "steps:1", 280, 180);
  EXPECT_NEAR(row(r, "transformer", 1).what_if_s[0], 0, 1e-12);
  EXPECT_NEAR(row(r, "transformer", 2).what_if_s[0] * 1e6, 80, 1e-6);
  // steps:5 skips all but the first (the skipped rows no longer bound the span): 10 -> 90.
  expect_what_if(r, "steps:5", 280, 80);
}

TEST_F(ReplayTest, StackedGainsMoreThanTheSumWhereBoundsAreParallel) {
  // request 0 [0,1000]: a launch [10,20] of gemm (stream 7, [30,430]); aten::cat [25,325] on the
  // host meanwhile; a launch [330,340] of add, queued behind the gemm ([435,445]: its stream is
  // the later cause, 5 us; its launch keeps its least, the call's 10 us). Span 30 -> 445 = 415.
  Kineto t;
  t.event("user_annotation", "request 0", 1, 1, 0, 1000);
  t.launch(10, 10, 1).kernel("gemm", 7, 30, 400, 1);
  t.op("aten::cat", 25, 300);
  t.launch(330, 10, 2).kernel("add", 7, 435, 10, 2);
  const RankReplay r =
      run(t, {"host", "kernel:^gemm$=0.5", "comm", "kernel:^gemm$=0.5,host", "host,peak"});
  // host alone: every host edge 0, gemm's launch keeps 20 - 10: gemm [10,410], add's launch at
  // 0 + 0, its stream 410 + 5: [415,425]. 10 -> 425 = 415: nothing (the device bounds).
  expect_what_if(r, "host", 415, 415);
  // The gemm at half alone: [30,230]; add at max(330 + 10, 230 + 5) = 340 -> 350: 320 (the host
  // now bounds).
  expect_what_if(r, "kernel:^gemm$=0.5", 415, 320);
  // Both in one replay: gemm [10,210], add at max(0, 215) -> 225: 10 -> 225 = 215. The separate
  // gains add up to 95; together they gain 200.
  expect_what_if(r, "kernel:^gemm$=0.5,host", 415, 215);
  // peak has nothing to act on (no FLOPs), so neither does the what-if holding it.
  EXPECT_FALSE(what_if(r, "host,peak").applies);
  EXPECT_EQ(what_if(r, "host,peak").why.rfind("peak: ", 0), 0u) << what_if(r, "host,peak").why;
  // Stacked: the combined what-if gains most alone (200); then nothing gains more (host's and the
  // gemm's edits are its own, and there is no communication): it stands alone.
  ASSERT_EQ(r.stacked.size(), 1u);
  EXPECT_EQ(r.stacked[0].what_if, "kernel:^gemm$=0.5,host");
  // Without the combined one asked, the greedy order finds it: the gemm first (95), then host
  // against the gemm's replay (320 -> 215: 105 more, where host alone gained nothing).
  const RankReplay s = run(t, {"host", "kernel:^gemm$=0.5", "comm"});
  ASSERT_EQ(s.stacked.size(), 2u);
  EXPECT_EQ(s.stacked[0].what_if, "kernel:^gemm$=0.5");
  EXPECT_NEAR(s.stacked[0].span_s * 1e6, 415, 1e-6);
  EXPECT_NEAR(s.stacked[0].predicted_s * 1e6, 320, 1e-6);
  EXPECT_NEAR(s.stacked[0].gain_s * 1e6, 95, 1e-6);
  EXPECT_EQ(s.stacked[1].what_if, "host");
  EXPECT_NEAR(s.stacked[1].span_s * 1e6, 320, 1e-6);
  EXPECT_NEAR(s.stacked[1].predicted_s * 1e6, 215, 1e-6);
  EXPECT_NEAR(s.stacked[1].gain_s * 1e6, 105, 1e-6);
  EXPECT_EQ(s.stacked[0].span_s, what_if(s, "host").span_s);
  EXPECT_EQ(s.stacked[0].predicted_s, what_if(s, "kernel:^gemm$=0.5").predicted_s);
  ASSERT_EQ(row(s, "request").stacked_s.size(), 2u);
  EXPECT_NEAR(row(s, "request").stacked_s[1] * 1e6, 215, 1e-6);
}

TEST_F(ReplayTest, StackedGainsLessThanTheSumWhereEditsShareTime) {
  // The trace of DenoisingStepsSkipped: request 0, three transformer calls [0,100], [100,200],
  // [200,300], each launching (at +5, 5 us) one gemm at +10 for 80 us. Span 10 -> 290 = 280.
  const Kineto t = three_denoising_steps();
  const RankReplay r = run(t, {"host", "steps:1", "peak", "comm"});
  // steps:1 (call 1 skipped): 180, as there.
  expect_what_if(r, "steps:1", 280, 180);
  // host: every launch at 0; each gemm's launch keeps 5 - 5 and its stream its least (0): the
  // gemms back to back, [0,80], [80,160], [160,240]: 240.
  expect_what_if(r, "host", 280, 240);
  EXPECT_FALSE(what_if(r, "peak").applies);
  // Stacked: steps:1 first (100); then host against it: gemm 0 [0,80], gemm 2 right after the
  // skipped one at 80 -> 160: 180 -> 160, 20 more, not host's 40 alone (the skipped call's host
  // time was in both). The sum of the separate gains (140) says 140 us; together it is 120.
  ASSERT_EQ(r.stacked.size(), 2u);
  EXPECT_EQ(r.stacked[0].what_if, "steps:1");
  EXPECT_NEAR(r.stacked[0].gain_s * 1e6, 100, 1e-6);
  EXPECT_EQ(r.stacked[1].what_if, "host");
  EXPECT_NEAR(r.stacked[1].span_s * 1e6, 180, 1e-6);
  EXPECT_NEAR(r.stacked[1].predicted_s * 1e6, 160, 1e-6);
  EXPECT_NEAR(r.stacked[1].gain_s * 1e6, 20, 1e-6);
  // Per range: the last call's gemm takes its 80 us in every state.
  const ReplayRow& last = row(r, "transformer", 2);
  ASSERT_EQ(last.stacked_s.size(), 2u);
  EXPECT_NEAR(last.stacked_s[0] * 1e6, 80, 1e-6);
  EXPECT_NEAR(last.stacked_s[1] * 1e6, 80, 1e-6);
  EXPECT_NEAR(row(r, "request").stacked_s[1] * 1e6, 160, 1e-6);
  // One what-if alone stacks nothing.
  EXPECT_TRUE(run(t, {"host"}).stacked.empty());
}

TEST_F(ReplayTest, TheWaterfallTraceWithItsRecords) {
  // The checked-in trace: every range replayed exactly, every what-if applies (the records
  // price the transformer calls: peak), each range's prediction at least its device-busy bound.
  ExplainOptions options;
  options.threads = 1;
  options.records = {VXPERF_EXPLAIN_TRACES "/waterfall.records.jsonl"};
  options.replay = ReplayRequest{standard_what_ifs()};
  const Explanation e = explain_traces({VXPERF_EXPLAIN_TRACES "/waterfall_rank0.json"}, options);
  ASSERT_EQ(e.ranks.size(), 1u);
  ASSERT_TRUE(e.ranks[0].replay);
  const RankReplay& r = *e.ranks[0].replay;
  EXPECT_LT(r.largest_error_pct, 1e-9);
  ASSERT_EQ(r.what_ifs.size(), 5u);
  for (const WhatIfResult& w : r.what_ifs) {
    EXPECT_TRUE(w.applies) << w.what_if << ": " << w.why;
    EXPECT_GE(w.gain_s, -1e-12) << w.what_if;
  }
  for (const ReplayRow& w : r.rows) {
    EXPECT_LT(w.error_pct, 1e-9) << w.range;
    double sum = 0;
    for (const auto& [b, s] : w.path_s) sum += s;
    EXPECT_NEAR(sum, w.replayed_s, 1e-12) << w.range;
  }
  // peak: the transformer calls (priced) get shorter; the stages without FLOPs keep their
  // computation though their request is priced; the request gains nothing: its path is the
  // host's (vae_dec's kernel waits for its launch at 710 whatever the device does before).
  EXPECT_NEAR(what_if(r, "peak").gain_s, 0, 1e-12);
  EXPECT_GT(row(r, "request").path_s.at("host"), 0.5 * row(r, "request").span_s);
  const std::size_t peak = 3;
  ASSERT_EQ(r.what_ifs[peak].what_if, "peak");
  for (const char* unpriced : {"text_encoder", "vae_dec"}) {
    EXPECT_DOUBLE_EQ(row(r, unpriced).what_if_s[peak], row(r, unpriced).span_s) << unpriced;
  }
  EXPECT_LT(row(r, "transformer", 0).what_if_s[peak], row(r, "transformer", 0).span_s);
  // Stacked: steps:1, then host, then peak, which gained the request nothing alone (its path was
  // the host's) and gains once host is applied; each line starts where the one above ended.
  ASSERT_EQ(r.stacked.size(), 3u);
  EXPECT_EQ(r.stacked[0].what_if, "steps:1");
  EXPECT_EQ(r.stacked[1].what_if, "host");
  EXPECT_EQ(r.stacked[2].what_if, "peak");
  EXPECT_GT(r.stacked[2].gain_s, 1e-6);
  for (std::size_t i = 1; i < r.stacked.size(); ++i) {
    EXPECT_EQ(r.stacked[i].span_s, r.stacked[i - 1].predicted_s);
    EXPECT_LT(r.stacked[i].predicted_s, r.stacked[i].span_s);
  }
  EXPECT_LT(r.stacked[1].gain_s, what_if(r, "host").gain_s);  // the skipped step's host time
  const std::string json = explanation_json(e);
  EXPECT_NE(json.find("\"replay\""), std::string::npos);
  EXPECT_NE(json.find("\"stacked\""), std::string::npos);
  EXPECT_NE(json.find("\"critical_path_s\""), std::string::npos);
  const std::string text = explanation_text(e);
  EXPECT_NE(text.find("largest error of a row's time 0.000 us, of a replayed span 0.0000%"),
            std::string::npos);
  EXPECT_NE(text.find("what-if"), std::string::npos);
  EXPECT_NE(text.find("    then peak "), std::string::npos);
  const std::string page = explanation_html(e);
  EXPECT_NE(page.find("What-ifs, ranked by gain"), std::string::npos);
  EXPECT_NE(page.find("What-ifs stacked"), std::string::npos);
  EXPECT_NE(page.find("Its critical path per range"), std::string::npos);
}

// The replay reads the host rows no analysis reads apart, in 20 bytes each (whole us from a base,
// anything else escaped); with --critical-path it reads every row whole. Both give the same
// replay, to the bit, on CPU ops made to test the packing: whole starts before the first
// fractional one (rounded at the end) and after it (rounded as read), durations of 0, -0, -1
// and past 32 bits, starts far from the base, ops of equal times (ordered by the file), and a
// worker thread fed by the thread of the ranges at a time where that thread has points of both
// kinds.
TEST_F(ReplayTest, TheSameReplayWithThePlainRowsApartOrWhole) {
  Kineto t;
  // Step 0 (no device rows: its span is its own) with a data loader whose duration the rounding
  // takes 0.5 us off, read before the file is known to need it: its path's data_loading says it.
  t.event("user_annotation", "step 0", 1, 1, 2000, 100);
  t.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 2010, 20.5);
  t.op("aten::stack", 2040, 10);
  t.op("aten::empty", 1, 0).op("aten::zeros", 1, 0).op("aten::add", 2, 2.5);
  t.op("aten::neg", 3, -0.0).op("aten::huge", 4, 5e9);
  t.event("user_annotation", "request 0", 1, 1, 0, 1000);
  for (int i = 0; i < 3; ++i) {
    const double at = 100.0 * i;
    t.event("user_annotation", "transformer", 1, 1, at, 100);
    t.op("aten::linear", at + 2, 20).op("aten::mm", at + 4.5, 10.25);  // fractional: rounding
    t.launch(at + 5, 5, i + 1).kernel("gemm", 7, at + 10, 80, i + 1);
    t.op("aten::relu", at + 30, -1).op("aten::relu", at + 30, 0).op("aten::gelu", at + 30, 2);
    t.op("MmBackward0", at + 40, 20, 2).launch(at + 45, 2, i + 11, 2);
    t.kernel("bwd_gemm", 7, at + 95, 3, i + 11);
  }
  t.op("aten::far", 3e9, 1).op("aten::farther", 1e17, 1);
  const std::vector<std::string> what_ifs = {"host", "steps:1", "kernel:gemm=0.5,host"};
  const RankReplay apart = run(t, what_ifs), whole = run(t, what_ifs, true);
  EXPECT_GT(apart.nodes, 60);
  EXPECT_EQ(apart.nodes, whole.nodes);
  EXPECT_EQ(apart.edges, whole.edges);
  EXPECT_EQ(apart.largest_row_error_us, whole.largest_row_error_us);
  EXPECT_EQ(apart.largest_error_pct, whole.largest_error_pct);
  ASSERT_EQ(apart.rows.size(), whole.rows.size());
  for (std::size_t i = 0; i < apart.rows.size(); ++i) {
    const ReplayRow &a = apart.rows[i], &w = whole.rows[i];
    EXPECT_EQ(a.range, w.range);
    EXPECT_EQ(a.replayed_s, w.replayed_s) << a.range;
    EXPECT_EQ(a.path_s, w.path_s) << a.range;
    EXPECT_EQ(a.what_if_s, w.what_if_s) << a.range;
    EXPECT_EQ(a.stacked_s, w.stacked_s) << a.range;
  }
  ASSERT_EQ(apart.what_ifs.size(), 3u);
  ASSERT_EQ(whole.what_ifs.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(apart.what_ifs[i].predicted_s, whole.what_ifs[i].predicted_s);
  }
  // Skipping a step and the host gain something here: the what-ifs are not all the measured run.
  EXPECT_LT(apart.what_ifs[1].predicted_s, apart.what_ifs[1].span_s);
  // The loader [2010, 2030.5] rounded to [2010, 2030]: 20 us of loading, 80 of host.
  Path step;
  for (const auto& [b, sec] : row(apart, "step").path_s) step[b] = sec * 1e6;
  EXPECT_NEAR(step["data_loading"], 20, 1e-6);
  EXPECT_NEAR(step["host"], 80, 1e-6);
}

TEST_F(ReplayTest, NothingWithoutTheOption) {
  ExplainOptions options;
  options.threads = 1;
  options.records = {"/dev/null"};
  const Explanation e = explain_traces({VXPERF_EXPLAIN_TRACES "/waterfall_rank0.json"}, options);
  ASSERT_EQ(e.ranks.size(), 1u);
  EXPECT_FALSE(e.ranks[0].replay);
  EXPECT_EQ(explanation_json(e).find("\"replay\""), std::string::npos);
  // (not "replay" alone: the file's path may hold it)
  EXPECT_EQ(explanation_text(e).find("vxperf's graph"), std::string::npos);
  EXPECT_EQ(explanation_text(e).find("what-if"), std::string::npos);
  EXPECT_EQ(explanation_html(e).find("vxperf's replay"), std::string::npos);
}

TEST(WhatIfSpecTest, Specs) {
  auto kind = [](const std::string& spec) {
    const WhatIfSpec w = parse_what_if(spec);
    EXPECT_EQ(w.spec, spec);
    EXPECT_EQ(w.edits.size(), 1u) << spec;
    return w.edits.empty() ? WhatIfEdit::Kind::kHost : w.edits[0].kind;
  };
  EXPECT_EQ(kind("host"), WhatIfEdit::Kind::kHost);
  EXPECT_EQ(kind("comm"), WhatIfEdit::Kind::kComm);
  EXPECT_EQ(kind("copies"), WhatIfEdit::Kind::kCopies);
  EXPECT_EQ(kind("peak"), WhatIfEdit::Kind::kPeak);
  EXPECT_EQ(kind("kernel:flash.*=0.7"), WhatIfEdit::Kind::kKernel);
  const WhatIfEdit k = parse_what_if("kernel:flash.*=0.7").edits.at(0);
  EXPECT_EQ(k.pattern, "flash.*");
  EXPECT_EQ(k.factor, 0.7);
  EXPECT_EQ(parse_what_if("kernel:a=b=2").edits.at(0).pattern, "a=b");  // the last '=' splits
  EXPECT_EQ(parse_what_if("steps:3").edits.at(0).steps, 3);
  for (const char* bad : {"", "hosts", "kernel:x", "kernel:x=", "kernel:x=-1", "kernel:(=0.5",
                          "steps:0", "steps:", "steps:2x", "host,", ",host", "host,hosts",
                          "host,host", "peak,kernel:x=1,peak"}) {
    EXPECT_THROW(parse_what_if(bad), std::invalid_argument) << bad;
  }
  EXPECT_EQ(standard_what_ifs().size(), 5u);
}

TEST(WhatIfSpecTest, EditsTogether) {
  // Commas join edits; a comma not followed by an edit's name is a kernel REGEX's own.
  const WhatIfSpec w = parse_what_if("peak,kernel:a{1,2},b=0.5,steps:2,host");
  EXPECT_EQ(w.spec, "peak,kernel:a{1,2},b=0.5,steps:2,host");
  ASSERT_EQ(w.edits.size(), 4u);
  EXPECT_EQ(w.edits[0].kind, WhatIfEdit::Kind::kPeak);
  EXPECT_EQ(w.edits[1].kind, WhatIfEdit::Kind::kKernel);
  EXPECT_EQ(w.edits[1].pattern, "a{1,2},b");
  EXPECT_EQ(w.edits[1].factor, 0.5);
  EXPECT_EQ(w.edits[1].spec, "kernel:a{1,2},b=0.5");
  EXPECT_EQ(w.edits[2].steps, 2);
  EXPECT_EQ(w.edits[3].kind, WhatIfEdit::Kind::kHost);
}

}  // namespace
}  // namespace vxperf::explain
