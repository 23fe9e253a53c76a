// `vxperf explain --critical-path`: HTA 0.6.1's critical path on traces built here, each path and
// breakdown worked out by hand in the comments (node numbers are HTA's: every start and end of a
// CP event by time, then by event). The situations: a sync that makes the host wait (and the same
// trace without sync events), a kernel on another stream joined by an event, a launch queued
// behind a long kernel, a data-loader stall, NCCL overlapping compute, the autograd thread's
// launches, the runtime lock across threads, a device-wide sync over two streams, an event sync,
// overlapping kernels (a negative edge), networkx's ties, the annotation's instances, and what
// HTA refuses. Also PathGraph's orders and shorten_name on their own.
//
// With VXPERF_CRITICAL_PATH_TRACES=DIR each trace is also written there (one directory per test)
// so that bench/hta_numbers.py can run HTA itself on the same files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "explain/hta_rules.h"
#include "explain/path_graph.h"
#include "kineto_builder.h"
#include "test_dir.h"
#include "vxperf/explain.h"

namespace vxperf::explain {
namespace {

namespace fs = std::filesystem;

class CriticalPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    name_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = testing::fresh_test_dir("vxperf-cp");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the trace (and a copy under VXPERF_CRITICAL_PATH_TRACES/<test>[-n]/) and returns it.
  std::string write(const Kineto& t, const std::string& variant = "") {
    const std::string file = "trace" + variant + ".json";
    std::ofstream(dir_ / file) << t.text();
    if (const char* keep = std::getenv("VXPERF_CRITICAL_PATH_TRACES")) {
      const fs::path d = fs::path(keep) / (name_ + variant);
      fs::create_directories(d);
      std::ofstream(d / "trace.json") << t.text();
    }
    return (dir_ / file).string();
  }

  RankCriticalPath run(const std::string& path, const std::string& annotation = "ProfilerStep",
                       bool each = true, std::int64_t first = 0, std::int64_t last = 0) {
    ExplainOptions options;
    options.threads = 1;
    options.records = {"/dev/null"};
    CriticalPathRequest r;
    r.annotation = annotation;
    r.each = each;
    r.first = first;
    r.last = last;
    options.critical_path = r;
    problems_ = {};
    Explanation e = explain_traces({path}, options);
    problems_ = e.problems;
    EXPECT_EQ(e.ranks.size(), 1u);
    if (e.ranks.empty() || !e.ranks[0].critical_path) return {};
    return *e.ranks[0].critical_path;
  }

  bool said(const std::string& what) const {
    for (const std::string& p : problems_) {
      if (p.find(what) != std::string::npos) return true;
    }
    return false;
  }

  std::string name_;
  fs::path dir_;
  std::vector<std::string> problems_;
};

using Bounds = std::map<std::string, double>;
using Edges = std::map<std::string, std::int64_t>;
struct Top {
  std::int64_t index;
  std::string bound_by;
  double us;
  std::int64_t edges;
};

constexpr const char* kOp = "critical_path_operator";
constexpr const char* kDep = "critical_path_dependency";
constexpr const char* kLaunch = "critical_path_kernel_launch_delay";
constexpr const char* kKK = "critical_path_kernel_kernel_delay";
constexpr const char* kSync = "critical_path_sync_dependency";

// The instance's numbers: HTA gives a path; its length (= the summary's total unless said), its
// nodes, the breakdown (us each, pct = us / total * 100), the edges by type, the top events.
void expect_path(const CriticalPathInstance& i, double length, std::int64_t nodes,
                 const Bounds& bounds, const Edges& edges, const std::vector<Top>& top,
                 std::optional<double> summary_total = std::nullopt) {
  ASSERT_EQ(i.hta, "ok") << i.why;
  ASSERT_TRUE(i.has_path);
  EXPECT_EQ(i.length_us, length);
  const double total = summary_total.value_or(length);
  EXPECT_EQ(i.summary_total_us, total);
  EXPECT_EQ(i.path_nodes, nodes);
  Bounds got;
  for (const CriticalPathBound& b : i.breakdown) {
    got[b.bound_by] = b.us;
    ASSERT_TRUE(b.pct.has_value());
    EXPECT_DOUBLE_EQ(*b.pct, b.us / total * 100) << b.bound_by;
  }
  EXPECT_EQ(got, bounds);
  EXPECT_EQ(i.edges, edges);
  ASSERT_EQ(i.top_events.size(), top.size());
  for (std::size_t k = 0; k < top.size(); ++k) {
    EXPECT_EQ(i.top_events[k].index, top[k].index) << k;
    EXPECT_EQ(i.top_events[k].bound_by, top[k].bound_by) << k;
    EXPECT_EQ(i.top_events[k].us, top[k].us) << k;
    EXPECT_EQ(i.top_events[k].edges, top[k].edges) << k;
  }
}

// 0 ProfilerStep#1 [0,1000]; 1 aten::mm [10,40] launching (2 [20,30]) the 400-us gemm (3, stream
// 7, [50,450]); 4 aten::item [60,500] around 5 cudaStreamSynchronize [70,460], whose cuda_sync
// event is 6 (Stream Sync on stream 7); 7 aten::add [510,530] launching (8 [515,525]) 9 add
// [540,560].
Kineto host_waits_in_a_sync(bool sync_events) {
  Kineto t;
  t.step(1, 0, 1000).op("aten::mm", 10, 30).launch(20, 10, 1);
  t.kernel("gemm", 7, 50, 400, 1);
  t.op("aten::item", 60, 440).runtime("cudaStreamSynchronize", 70, 390, 2);
  if (sync_events) t.sync("Stream Sync", 7, 70, 390, 2);
  t.op("aten::add", 510, 20).launch(515, 10, 3);
  t.kernel("add", 7, 540, 20, 3);
  return t;
}

TEST_F(CriticalPathTest, ASyncThatMakesTheHostWait) {
  // Nodes: n0 1s@10, n1 2s@20, n2 2e@30, n3 1e@40, n4 3s@50, n5 4s@60, n6 5s@70, n7 6s@70,
  // n8 3e@450, n9 5e@460, n10 6e@460, n11 4e@500, n12 7s@510, n13 8s@515, n14 8e@525,
  // n15 7e@530, n16 9s@540, n17 9e@560.
  // Lock pass: n1->n2 (10), n13->n14 (10). Call stack: n0->n1 (10, aten::mm), n2->n3 (10,
  // aten::mm), n3->n5 dependency, n5->n6 (10, aten::item), n6->n9 (the sync's own 390 us weigh
  // 0: blocking), n9->n11 (40, aten::item), n11->n12 dependency, n12->n13 (5), n14->n15 (5).
  // GPU pass: gemm n4->n8 (400) with a launch edge n1->n4 (50 - 20 = 30: queue 1 at the launch,
  // 0 at the start); the Stream Sync: n8->n9 (sync); add n16->n17 (20), its launch n13->n16 (25).
  // Distances: n8 = 10 + 30 + 400 = 440, n9 = max(n6 40, n8 440) = 440, n11 480, n12 480,
  // n13 485, n16 510, n17 530. The path: n0 n1 n4 n8 n9 n11 n12 n13 n16 n17.
  const RankCriticalPath cp = run(write(host_waits_in_a_sync(true)));
  ASSERT_EQ(cp.instances.size(), 1u);
  EXPECT_TRUE(cp.sync_events);
  const CriticalPathInstance& i = cp.instances[0];
  EXPECT_EQ(i.row, "ProfilerStep#1");
  EXPECT_EQ(*i.window_begin_us, 0);
  EXPECT_EQ(*i.window_end_us, 1000);
  expect_path(i, 530, 10,
              {{"", 0},
               {"cpu_bound", 10 + 40 + 5},
               {"gpu_compute_bound", 400 + 20},
               {"gpu_kernel_launch_overhead", 30 + 25}},
              {{kOp, 5}, {kLaunch, 2}, {kSync, 1}, {kDep, 1}},
              {{3, "gpu_compute_bound", 400, 1},
               {4, "cpu_bound", 40, 1},
               {9, "gpu_compute_bound", 20, 1},
               {1, "cpu_bound", 10, 1},
               {7, "cpu_bound", 5, 1}});
}

TEST_F(CriticalPathTest, WithoutSyncEventsThePathCrossesToTheGpuOnce) {
  // The same trace without its Stream Sync (rows 7-9 are now 6-8): nothing leads from the gemm's
  // end back to the host, and the 390 us the host waits weigh 0. The host chain: n9 (the sync's
  // end) = 40, then 80, ..., add's end 130; the gemm's end: 10 + 30 + 400 = 440, the longest.
  const RankCriticalPath cp = run(write(host_waits_in_a_sync(false)));
  ASSERT_EQ(cp.instances.size(), 1u);
  EXPECT_FALSE(cp.sync_events);
  expect_path(cp.instances[0], 440, 4,
              {{"cpu_bound", 10}, {"gpu_compute_bound", 400}, {"gpu_kernel_launch_overhead", 30}},
              {{kOp, 2}, {kLaunch, 1}},
              {{3, "gpu_compute_bound", 400, 1}, {1, "cpu_bound", 10, 1}});
}

TEST_F(CriticalPathTest, AKernelOnAnotherStreamJoinedByAnEvent) {
  // 1 launch [10,20] -> 2 gemm_a (stream 7, [30,230]); 3 cudaEventRecord [25,30] (after it);
  // 4 cudaStreamWaitEvent [35,40], its cuda_sync 5 (Stream Wait Event on stream 20, waiting on
  // stream 7's record 2); 6 launch [45,55] -> 7 gemm_b (stream 20, [240,300]).
  Kineto t;
  t.step(1, 0, 1000).launch(10, 10, 1).kernel("gemm_a", 7, 30, 200, 1);
  t.runtime("cudaEventRecord", 25, 5, 2).runtime("cudaStreamWaitEvent", 35, 5, 3);
  t.sync("Stream Wait Event", 20, 36, 2, 3, 7, 2);
  t.launch(45, 10, 4).kernel("gemm_b", 20, 240, 60, 4);
  // The record's previous launch on stream 7 is 1 (its kernel: 2); the wait's next launch onto
  // stream 20 from the same thread is 6 (its kernel: 7): gemm_b waits for gemm_a.
  // Nodes: n0 1s@10, n1 1e@20, n2 3s@25, n3 2s@30, n4 3e@30 (at 30 event 2 before 3), n5 4s@35,
  // n6 5s@36, n7 5e@38, n8 4e@40, n9 6s@45, n10 6e@55, n11 2e@230, n12 7s@240, n13 7e@300.
  // gemm_a: n3->n11 (200), launch n0->n3 (20); gemm_b: n12->n13 (60), sync n11->n12; its launch
  // edge is not added (the sync ended at 230, after the launch at 45), nor a kernel-kernel one
  // (nothing before it on stream 20). Host chain: at most 30. Path n0 n3 n11 n12 n13: 280.
  const RankCriticalPath cp = run(write(t));
  expect_path(cp.instances.at(0), 280, 5,
              {{"", 0}, {"gpu_compute_bound", 260}, {"gpu_kernel_launch_overhead", 20}},
              {{kOp, 2}, {kLaunch, 1}, {kSync, 1}},
              {{2, "gpu_compute_bound", 200, 1}, {7, "gpu_compute_bound", 60, 1}});
}

TEST_F(CriticalPathTest, ALaunchQueuedBehindALongKernel) {
  // 1 aten::mm [5,40] launches 2 [10,20] and 3 [25,35]; their kernels 4 gemm_long [40,540] and
  // 5 gemm_next [545,565] on stream 7. Queue lengths: 10 -> 1, 25 -> 2, 40 -> 1 (gemm_long
  // starts with gemm_next still queued), 545 -> 0.
  Kineto t;
  t.step(1, 0, 2000).op("aten::mm", 5, 35).launch(10, 10, 1).launch(25, 10, 2);
  t.kernel("gemm_long", 7, 40, 500, 1).kernel("gemm_next", 7, 545, 20, 2);
  // gemm_long: n6->n7 (500) and no launch edge (1 op queued at its start: qlen 1, not 0) nor a
  // kernel-kernel one (none before it): a chain of its own. gemm_next: launched with one op
  // outstanding (qlen 2): the kernel-kernel delay n7->n8 (545 - 540 = 5, attributed to
  // gemm_long). Host: 5 + 10 + 5 + 10 + 5 = 35 < 525. Path n6 n7 n8 n9, gemm_long listed twice.
  const RankCriticalPath cp = run(write(t));
  expect_path(cp.instances.at(0), 525, 4,
              {{"gpu_compute_bound", 520}, {"gpu_kernel_kernel_overhead", 5}}, {{kOp, 2}, {kKK, 1}},
              {{4, "gpu_compute_bound", 500, 1},
               {5, "gpu_compute_bound", 20, 1},
               {4, "gpu_kernel_kernel_overhead", 5, 1}});
}

TEST_F(CriticalPathTest, ADataLoaderStallIsHostIdleAndNeverCounts) {
  // 1 the loader's range [10,1010] (a user_annotation: no CP event), 2 aten::stack [900,1000]
  // inside it; 3 aten::mm [1100,1150] launching (4 [1110,1120]) 5 gemm [1130,1330]; 6 a launch
  // [1200,1210] of 7 gemm2 [2900,2950], 1570 us after gemm's end: no kernel-kernel edge (1500 at
  // most), no launch edge (gemm ended after that launch began): gemm2 starts a chain of its own.
  Kineto t;
  t.step(1, 0, 3000);
  t.event("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1, 1,
          10, 1000);
  t.op("aten::stack", 900, 100).op("aten::mm", 1100, 50).launch(1110, 10, 1);
  t.kernel("gemm", 7, 1130, 200, 1).launch(1200, 10, 2).kernel("gemm2", 7, 2900, 50, 2);
  // Nodes: n0 2s@900, n1 2e@1000, n2 3s@1100, n3 4s@1110, n4 4e@1120, n5 5s@1130, n6 3e@1150,
  // n7 6s@1200, n8 6e@1210, n9 5e@1330, n10 7s@2900, n11 7e@2950. aten::stack n0->n1 (100), a
  // dependency n1->n2 (the 890 us of the loader before it, and the gap, weigh nothing), n2->n3
  // (10), launch n3->n5 (20), gemm n5->n9 (200): 330.
  const RankCriticalPath cp = run(write(t));
  expect_path(
      cp.instances.at(0), 330, 6,
      {{"", 0}, {"cpu_bound", 110}, {"gpu_compute_bound", 200}, {"gpu_kernel_launch_overhead", 20}},
      {{kOp, 3}, {kDep, 1}, {kLaunch, 1}},
      {{5, "gpu_compute_bound", 200, 1}, {2, "cpu_bound", 100, 1}, {3, "cpu_bound", 10, 1}});
}

TEST_F(CriticalPathTest, NcclOverlappingCompute) {
  // NCCL on stream 20 [30,330] (launched [10,20]); under it on stream 7 a gemm [60,260]
  // (launched [40,50]) and a second one [290,310] (launched [270,280] after the first ended). The
  // path runs through the collective: launch n0->n2 (20) + n2->n11 (300). Its name is typed
  // after HTA's shortening ("void ncclKernel_...(...)" -> "ncclKernel_..."): communication.
  Kineto t;
  t.step(1, 0, 1000).launch(10, 10, 1);
  t.kernel("void ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 20, 30, 300, 1);
  t.launch(40, 10, 2).kernel("void at::native::gemm<float>(int)", 7, 60, 200, 2);
  t.launch(270, 10, 3).kernel("gemm2", 7, 290, 20, 3);
  const RankCriticalPath cp = run(write(t));
  expect_path(cp.instances.at(0), 320, 3,
              {{"gpu_communication_bound", 300}, {"gpu_kernel_launch_overhead", 20}},
              {{kOp, 1}, {kLaunch, 1}}, {{2, "gpu_communication_bound", 300, 1}});
  EXPECT_EQ(cp.instances[0].top_events[0].name,
            "void ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)");
}

// Thread 1: 1 "## forward ##" [5,100] around 2 aten::mm [10,40] launching (3 [20,30]) 4 fwd_gemm
// [35,135]; thread 2: 5 the autograd engine's MmBackward0 [200,300] launching (6 [210,220])
// 7 bwd_gemm [230,430]; thread 1: 8 Optimizer.step [500,520].
Kineto autograd(const std::string& forward_name) {
  Kineto t;
  t.step(1, 0, 1000).event("user_annotation", forward_name, 1, 1, 5, 95);
  t.op("aten::mm", 10, 30).launch(20, 10, 1).kernel("fwd_gemm", 7, 35, 100, 1);
  t.op("autograd::engine::evaluate_function: MmBackward0", 200, 100, 2);
  t.launch(210, 10, 2, 2).kernel("bwd_gemm", 7, 230, 200, 2);
  t.op("Optimizer.step", 500, 20);
  return t;
}

TEST_F(CriticalPathTest, TheAutogradThreadsLaunchesJoinTheForwardThread) {
  // One thread has "forward" rows, one "autograd" rows: HTA takes thread 2 as thread 1, so the
  // backward follows the forward on one call stack. Nodes: n0 2s@10, n1 3s@20, n2 3e@30,
  // n3 4s@35, n4 2e@40, n5 4e@135, n6 5s@200, n7 6s@210, n8 6e@220, n9 7s@230, n10 5e@300,
  // n11 7e@430, n12 8s@500, n13 8e@520. Chain n0->n1 (10) ->n2 (lock, 10) ->n4 (10) ->n6 (a
  // dependency) ->n7 (10), then bwd_gemm's launch n7->n9 (20) and n9->n11 (200): 260.
  const RankCriticalPath cp = run(write(autograd("## forward ##")));
  expect_path(
      cp.instances.at(0), 260, 8,
      {{"", 0}, {"cpu_bound", 40}, {"gpu_compute_bound", 200}, {"gpu_kernel_launch_overhead", 20}},
      {{kOp, 5}, {kDep, 1}, {kLaunch, 1}},
      {{7, "gpu_compute_bound", 200, 1},
       {2, "cpu_bound", 20, 2},
       {3, "cpu_bound", 10, 1},
       {5, "cpu_bound", 10, 1}});
  // Without a "forward" row the threads stay apart: the backward's chain alone, 10 + 20 + 200.
  const RankCriticalPath apart = run(write(autograd("## model ##"), "-apart"));
  expect_path(apart.instances.at(0), 230, 4,
              {{"cpu_bound", 10}, {"gpu_compute_bound", 200}, {"gpu_kernel_launch_overhead", 20}},
              {{kOp, 2}, {kLaunch, 1}},
              {{7, "gpu_compute_bound", 200, 1}, {5, "cpu_bound", 10, 1}});
}

TEST_F(CriticalPathTest, TheRuntimeLockChainsLaunchesAcrossThreads) {
  // Thread 1 launches k1 [0,50] while thread 2 launches k2 [10,30]: thread 2's call ends first,
  // so it holds the lock first. Nodes: n0 1s@0, n1 2s@10, n2 2e@30, n3 4s@40, n4 1e@50,
  // n5 3s@60, n6 5s@60, n7 4e@90, n8 3e@100, n9 5e@160. Lock pass at n2: n1->n2 (20, thread 2's
  // call), n0->n2 (a dependency: thread 1's call never gets an edge of its own 50 us), at n4:
  // n2->n4 (dependency). Then thread 1's aten::add [60,160]: n4->n6, n6->n9 (100). Path n1 n2 n4
  // n6 n9: 120; the kernels' paths are 30 + 50 and 60 + 40.
  Kineto t;
  t.step(1, 0, 1000).launch(0, 50, 1).launch(10, 20, 2, 2);
  t.kernel("k1", 7, 60, 40, 1).kernel("k2", 8, 40, 50, 2).op("aten::add", 60, 100);
  const RankCriticalPath cp = run(write(t));
  expect_path(cp.instances.at(0), 120, 5, {{"", 0}, {"cpu_bound", 120}}, {{kOp, 2}, {kDep, 2}},
              {{5, "cpu_bound", 100, 1}, {2, "cpu_bound", 20, 1}});
}

TEST_F(CriticalPathTest, ADeviceSyncWaitsForEveryStream) {
  // k7 (stream 7, [30,230], launched [10,20]) and k8 (stream 8, [40,300], launched [25,35]);
  // cudaDeviceSynchronize [40,310] and its Context Sync (stream -1); then aten::add [320,360].
  // Nodes: n0 1s@10, n1 1e@20, n2 3s@25, n3 2s@30, n4 3e@35, n5 4s@40, n6 5s@40, n7 2e@230,
  // n8 4e@300, n9 5e@310, n10 7s@320, n11 7e@360. Context Sync: n7->n9 and n8->n9 (sync). The
  // sync's end: max(host 20, k7 220, k8 10 + 0 + 15 + 260 = 285): through k8. Then
  // n9->n10 (dependency), n10->n11 (40): 325.
  Kineto t;
  t.step(1, 0, 1000).launch(10, 10, 1).kernel("k7", 7, 30, 200, 1);
  t.launch(25, 10, 2).kernel("k8", 8, 40, 260, 2);
  t.runtime("cudaDeviceSynchronize", 40, 270, 3).sync("Context Sync", -1, 40, 270, 3);
  t.op("aten::add", 320, 40);
  const RankCriticalPath cp = run(write(t));
  expect_path(
      cp.instances.at(0), 325, 8,
      {{"", 0}, {"cpu_bound", 50}, {"gpu_compute_bound", 260}, {"gpu_kernel_launch_overhead", 15}},
      {{kOp, 3}, {kDep, 2}, {kLaunch, 1}, {kSync, 1}},
      {{4, "gpu_compute_bound", 260, 1}, {7, "cpu_bound", 40, 1}, {1, "cpu_bound", 10, 1}});
}

TEST_F(CriticalPathTest, AnEventSyncWaitsForTheRecordedKernel) {
  // k (stream 7, [30,330]) launched [10,20]; cudaEventRecord [25,30] after it (its Event Sync
  // names stream 7); cudaEventSynchronize [40,340] with its Event Sync; aten::add [350,370].
  // Nodes: n0 1s@10, n1 1e@20, n2 3s@25, n3 2s@30, n4 3e@30, n5 4s@40, n6 2e@330, n7 4e@340,
  // n8 6s@350, n9 6e@370. Event Sync: k's end n6 -> the sync call's end n7. Path n0 n3 n6 n7 n8
  // n9: 20 + 300 + 0 + 0 + 20.
  Kineto t;
  t.step(1, 0, 1000).launch(10, 10, 1).kernel("k", 7, 30, 300, 1);
  t.runtime("cudaEventRecord", 25, 5, 2).runtime("cudaEventSynchronize", 40, 300, 3);
  t.sync("Event Sync", -1, 40, 300, 3, 7, 2).op("aten::add", 350, 20);
  const RankCriticalPath cp = run(write(t));
  expect_path(
      cp.instances.at(0), 340, 6,
      {{"", 0}, {"cpu_bound", 20}, {"gpu_compute_bound", 300}, {"gpu_kernel_launch_overhead", 20}},
      {{kOp, 2}, {kDep, 1}, {kLaunch, 1}, {kSync, 1}},
      {{2, "gpu_compute_bound", 300, 1}, {6, "cpu_bound", 20, 1}});
}

TEST_F(CriticalPathTest, OverlappingKernelsGiveANegativeEdge) {
  // k1 (stream 7, [100,300]) and k2 ([250,280]) launched before it started: k2 gets the
  // kernel-kernel edge k1's end -> its start, 250 - 300 = -50. The path counts it 0 (networkx's
  // length 200 + 0 + 30 = 230), the summary at -50 (total 180; shares of 180).
  Kineto t;
  t.step(1, 0, 1000).launch(10, 10, 1).launch(30, 10, 2);
  t.kernel("k1", 7, 100, 200, 1).kernel("k2", 7, 250, 30, 2);
  const RankCriticalPath cp = run(write(t));
  expect_path(cp.instances.at(0), 230, 4,
              {{"gpu_compute_bound", 230}, {"gpu_kernel_kernel_overhead", -50}},
              {{kOp, 2}, {kKK, 1}},
              {{3, "gpu_compute_bound", 200, 1},
               {4, "gpu_compute_bound", 30, 1},
               {3, "gpu_kernel_kernel_overhead", -50, 1}},
              180);
}

TEST_F(CriticalPathTest, NetworkxTiesTheFirstNodeInTopologicalOrderEndsThePath) {
  // op_a (thread 1, [50,150]) and op_b (thread 2, [0,100]) both weigh 100. Thread 1's edges are
  // added first (threads in (pid, tid) order), so op_a's nodes come first in the graph; the
  // first generation is [launch start, op_a start, op_b start], and op_a's end is the first node
  // of distance 100 in that order: the path is op_a, though op_b started earlier (its nodes
  // have the smaller numbers). A launch [200,210] of k [220,230] on thread 3: 30.
  Kineto t;
  t.step(1, 0, 1000).op("op_a", 50, 100).op("op_b", 0, 100, 2);
  t.launch(200, 10, 1, 3).kernel("k", 7, 220, 10, 1);
  const RankCriticalPath cp = run(write(t));
  expect_path(cp.instances.at(0), 100, 2, {{"cpu_bound", 100}}, {{kOp, 1}},
              {{1, "cpu_bound", 100, 1}});
}

// Steps 1-3 (the last is dropped), each with a GPU-side copy of its name (a gpu_user_annotation
// without a stream: a host row) and one launch and kernel: k1 [30,90] launched [10,20], k2
// [130,190] launched [110,120].
Kineto steps_with_gpu_copies() {
  Kineto t;
  t.step(1, 0, 100).event("gpu_user_annotation", "ProfilerStep#1", 0, 7, 30, 60);
  t.launch(10, 10, 1).kernel("k1", 7, 30, 60, 1);
  t.step(2, 100, 100).event("gpu_user_annotation", "ProfilerStep#2", 0, 7, 130, 60);
  t.launch(110, 10, 2).kernel("k2", 7, 130, 60, 2);
  t.step(3, 200, 100).launch(210, 10, 3).kernel("k3", 7, 230, 60, 3);
  return t;
}

TEST_F(CriticalPathTest, InstancesAreTheAnnotationsRowsInHtasOrder) {
  // The window drops step 3 (and k3); the frame lists the kept device rows first, then the host
  // rows: the annotation's rows are #1, its GPU copy, #2, its copy: four instances. A step's own
  // path: its launch's delay (20) and its kernel (60). A GPU copy's window holds only the copy
  // (k1 was launched before it): no edge, and HTA's path assertion fails.
  const std::string trace = write(steps_with_gpu_copies());
  const RankCriticalPath cp = run(trace);
  ASSERT_EQ(cp.instances.size(), 4u);
  const std::vector<std::string> rows = {"ProfilerStep#1", "ProfilerStep#1", "ProfilerStep#2",
                                         "ProfilerStep#2"};
  for (std::size_t k = 0; k < 4; ++k) {
    const CriticalPathInstance& i = cp.instances[k];
    EXPECT_EQ(i.first, static_cast<std::int64_t>(k));
    EXPECT_EQ(i.row, rows[k]);
    EXPECT_EQ(i.row_category, k % 2 ? "gpu_user_annotation" : "user_annotation");
    if (k % 2 == 0) {
      expect_path(i, 80, 3, {{"gpu_compute_bound", 60}, {"gpu_kernel_launch_overhead", 20}},
                  {{kOp, 1}, {kLaunch, 1}}, {{k == 0 ? 3 : 7, "gpu_compute_bound", 60, 1}});
    } else {
      EXPECT_EQ(i.hta, "raises");
      EXPECT_NE(i.why.find("fewer than 2 nodes"), std::string::npos) << i.why;
    }
  }
  EXPECT_EQ(*cp.instances[1].window_begin_us, 30);
  EXPECT_TRUE(said("critical path of \"ProfilerStep\" instance 1: HTA raises"));
  // Instances 0-2 together: [0, 200], both kernels. Path: launch 2's call (10), a dependency to
  // launch 6, its delay (20) and k2 (60): 90.
  const RankCriticalPath range = run(trace, "ProfilerStep", false, 0, 2);
  ASSERT_EQ(range.instances.size(), 1u);
  EXPECT_EQ(*range.instances[0].window_end_us, 200);
  expect_path(
      range.instances[0], 90, 5,
      {{"", 0}, {"cpu_bound", 10}, {"gpu_compute_bound", 60}, {"gpu_kernel_launch_overhead", 20}},
      {{kOp, 2}, {kDep, 1}, {kLaunch, 1}},
      {{7, "gpu_compute_bound", 60, 1}, {2, "cpu_bound", 10, 1}});
  // Past the last instance: nothing selected.
  const RankCriticalPath past = run(trace, "ProfilerStep", false, 9, 9);
  EXPECT_EQ(past.instances.at(0).hta, "raises");
  EXPECT_FALSE(past.instances[0].window_begin_us.has_value());
}

TEST_F(CriticalPathTest, WhatHtaRefusesIsSaidAndTheRestGoesOn) {
  Kineto plain;
  plain.step(1, 0, 1000).launch(10, 10, 1).kernel("k", 7, 30, 100, 1);
  const std::string plain_trace = write(plain, "-plain");
  // No name or category holds the annotation: HTA returns None.
  const RankCriticalPath none = run(plain_trace, "no such range");
  EXPECT_EQ(none.instances.at(0).hta, "None");
  EXPECT_TRUE(said("HTA returns None"));
  // The whole trace ("" annotation): k's launch delay (20) and k (100).
  const RankCriticalPath whole = run(plain_trace, "");
  expect_path(whole.instances.at(0), 120, 3,
              {{"gpu_compute_bound", 100}, {"gpu_kernel_launch_overhead", 20}},
              {{kOp, 1}, {kLaunch, 1}}, {{2, "gpu_compute_bound", 100, 1}});

  // The old Kineto categories (Runtime, Operator): the launch is no CP event, and the kernel's
  // launch edge finds no node to start from.
  Kineto old;
  old.step(1, 0, 1000).runtime("cudaLaunchKernel", 10, 10, 1, 1, "Runtime");
  old.kernel("k", 7, 30, 100, 1, "Kernel");
  const RankCriticalPath o = run(write(old, "-old"));
  EXPECT_EQ(o.instances.at(0).hta, "raises");
  EXPECT_NE(o.instances[0].why.find("Could not find runtime index = 1"), std::string::npos);

  // A sync edge inside one stream: stream 7 waits on an event recorded on stream 7.
  Kineto same;
  same.step(1, 0, 1000).launch(10, 10, 1).kernel("a", 7, 30, 70, 1);
  same.runtime("cudaEventRecord", 25, 3, 2).runtime("cudaStreamWaitEvent", 30, 3, 3);
  same.sync("Stream Wait Event", 7, 31, 1, 3, 7, 2);
  same.launch(40, 10, 4).kernel("b", 7, 110, 40, 4);
  const RankCriticalPath s = run(write(same, "-same-stream"));
  EXPECT_EQ(s.instances.at(0).hta, "False");
  EXPECT_TRUE(said("HTA returns success False"));

  // Two launch calls of one correlation (one before the window): the queue lengths' counts
  // differ (2 launch entries, 1 kernel).
  Kineto twice;
  twice.step(1, 100, 900).launch(10, 10, 1).launch(110, 10, 1).kernel("k", 7, 130, 70, 1);
  const RankCriticalPath q = run(write(twice, "-queue"));
  EXPECT_EQ(q.instances.at(0).hta, "raises");
  EXPECT_NE(q.instances[0].why.find("trace_counters"), std::string::npos) << q.instances[0].why;
  // Both in the window: HTA's clipped trace holds the kernel twice, and it stops earlier.
  Kineto both;
  both.step(1, 0, 1000).launch(10, 10, 1).launch(110, 10, 1).kernel("k", 7, 130, 70, 1);
  const RankCriticalPath b = run(write(both, "-twice"));
  EXPECT_EQ(b.instances.at(0).hta, "raises");
  EXPECT_NE(b.instances[0].why.find("TypeError"), std::string::npos) << b.instances[0].why;

  // A CPU-only profile: HTA stops (no queue-length series); its rules' host path is given:
  // aten::linear [0,100] holding aten::addmm [10,60]: 100 us of one op, the busy time; then
  // aten::relu [300,320] after 200 us of host idle that never counts: 120.
  Kineto cpu;
  cpu.step(1, 0, 1000)
      .op("aten::linear", 0, 100)
      .op("aten::addmm", 10, 50)
      .op("aten::relu", 300, 20);
  const RankCriticalPath c = run(write(cpu, "-cpu"));
  const CriticalPathInstance& ci = c.instances.at(0);
  EXPECT_EQ(ci.hta, "raises");
  EXPECT_NE(ci.why.find("Queue length time series"), std::string::npos);
  ASSERT_TRUE(ci.has_path);
  EXPECT_EQ(ci.length_us, 120);
  EXPECT_EQ(ci.breakdown.size(), 2u);  // "" (the dependency) and cpu_bound
  EXPECT_EQ(ci.breakdown[1].bound_by, "cpu_bound");
  EXPECT_EQ(ci.breakdown[1].us, 120);
}

TEST_F(CriticalPathTest, NothingOfItWithoutTheOption) {
  Kineto t;
  t.step(1, 0, 1000).launch(10, 10, 1).kernel("k", 7, 30, 100, 1);
  ExplainOptions options;
  options.records = {"/dev/null"};
  const Explanation e = explain_traces({write(t)}, options);
  ASSERT_EQ(e.ranks.size(), 1u);
  EXPECT_FALSE(e.ranks[0].critical_path.has_value());
  EXPECT_EQ(explanation_json(e).find("critical_path"), std::string::npos);
  // And HTA's other numbers are the same with it.
  options.critical_path = CriticalPathRequest{};
  Explanation with = explain_traces({write(t, "-again")}, options);
  ASSERT_EQ(with.ranks.size(), 1u);
  with.ranks[0].critical_path.reset();
  with.ranks[0].file = e.ranks[0].file;
  EXPECT_EQ(explanation_json(with), explanation_json(e));
}

// PathGraph on its own: networkx's orders.
TEST(PathGraphTest, AnEdgeAddedAgainKeepsItsPlaceAndTakesTheNewWeight) {
  PathGraph g;
  const auto e = g.add_edge(5, 3, 1, 10);
  g.add_edge(3, 9, 1, 1);
  EXPECT_EQ(g.add_edge(5, 3, 2, 2), e);  // overwritten in place
  EXPECT_EQ(g.edge(e).type, 2);
  EXPECT_EQ(g.edge(e).weight, 2);
  EXPECT_EQ(g.nodes(), (std::vector<PathGraph::Node>{5, 3, 9}));
  const auto p = g.longest_path();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->nodes, (std::vector<PathGraph::Node>{5, 3, 9}));
  EXPECT_EQ(p->length, 3);
}

TEST(PathGraphTest, TiesGoToTheFirstPredecessorAndTheFirstNodeInOrder) {
  // 1->2 (5), 3->2 (5): node 2's predecessors tie, the first added (1) wins. 4->5 (5): another
  // chain of 5, after 2 in topological order (generation 0: 1, 3, 4; generation 1: 2, 5).
  PathGraph g;
  g.add_edge(1, 2, 0, 5);
  g.add_edge(3, 2, 0, 5);
  g.add_edge(4, 5, 0, 5);
  auto order = g.topological_order();
  ASSERT_TRUE(order.has_value());
  EXPECT_EQ(*order, (std::vector<PathGraph::Node>{1, 3, 4, 2, 5}));
  auto p = g.longest_path();
  EXPECT_EQ(p->nodes, (std::vector<PathGraph::Node>{1, 2}));
  // A negative best restarts the path at the node; exactly 0 keeps the link; at equal
  // distances the first node in order ends the path (3, not 4 after a 0 edge). (networkx 3.6.1
  // gives these paths: [2, 3], then [2, 3, 4, 5].)
  PathGraph h;
  h.add_edge(1, 2, 0, -3);
  h.add_edge(2, 3, 0, 4);
  h.add_edge(3, 4, 0, 0);
  p = h.longest_path();
  EXPECT_EQ(p->nodes, (std::vector<PathGraph::Node>{2, 3}));
  h.add_edge(4, 5, 0, 1);
  p = h.longest_path();
  EXPECT_EQ(p->nodes, (std::vector<PathGraph::Node>{2, 3, 4, 5}));
  EXPECT_EQ(p->length, 5);
  // A cycle: no path.
  h.add_edge(5, 2, 0, 1);
  EXPECT_FALSE(h.longest_path().has_value());
  // Every edge 0: one node (HTA then fails its assertion).
  PathGraph z;
  z.add_edge(1, 2, 0, 0);
  EXPECT_EQ(z.longest_path()->nodes.size(), 1u);
}

TEST(ShortenNameTest, AsHtaShortensNames) {
  EXPECT_EQ(shorten_name("void at::native::foo<float>(int)"), "at::native::foo");
  EXPECT_EQ(shorten_name("void ncclKernel_AllReduce(ncclWorkElem)"), "ncclKernel_AllReduce");
  EXPECT_EQ(shorten_name("Memcpy HtoD (Pageable -> Device)"), "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(shorten_name("aten::mm"), "aten::mm");
  EXPECT_EQ(shorten_name("a->b<c>"), "ab");
  EXPECT_EQ(shorten_name("x) y(z"), "y(z");  // a ')' without its '(' drops all before it
  EXPECT_EQ(shorten_name("f(a) "), "");
}

}  // namespace
}  // namespace vxperf::explain
