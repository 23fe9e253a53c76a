// vxperf explain on traces built here, every expected number worked out by hand in the comments:
// HTA's analyses (streams overlapping, nested kernels, negative gaps, a missing launch, NCCL on its
// own stream, the last profiler step dropped, fractional timestamps), the waterfall against a
// records file, and bad input.
#include "vxperf/explain.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kineto_builder.h"
#include "test_dir.h"
#include "vxperf/records.h"

namespace vxperf::explain {
namespace {

namespace fs = std::filesystem;

// A Kineto trace written event by event.
class Trace {
 public:
  explicit Trace(int rank = -1) : rank_(rank) {}

  Trace& host(const std::string& name, const std::string& cat, double ts, double dur,
              long correlation = -1, int tid = 1) {
    std::string args = correlation >= 0
                           ? ", \"args\": {\"correlation\": " + std::to_string(correlation) + "}"
                           : "";
    return add("{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name +
               "\", \"pid\": 1, \"tid\": " + std::to_string(tid) + ", \"ts\": " + num(ts) +
               ", \"dur\": " + num(dur) + args + "}");
  }
  Trace& launch(double ts, double dur, long correlation,
                const std::string& name = "cudaLaunchKernel", int tid = 1) {
    return host(name, "cuda_runtime", ts, dur, correlation, tid);
  }
  Trace& step(int n, double ts, double dur) {
    return host("ProfilerStep#" + std::to_string(n), "user_annotation", ts, dur);
  }
  Trace& range(const std::string& name, double ts, double dur, int tid = 1) {
    return host(name, "user_annotation", ts, dur, -1, tid);
  }
  Trace& kernel(const std::string& name, int stream, double ts, double dur, long correlation,
                const std::string& cat = "kernel") {
    return add("{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name +
               "\", \"pid\": 0, \"tid\": " + std::to_string(stream) + ", \"ts\": " + num(ts) +
               ", \"dur\": " + num(dur) +
               ", \"args\": {\"device\": 0, \"stream\": " + std::to_string(stream) +
               ", \"correlation\": " + std::to_string(correlation) + ", \"grid\": [1, 1, 1]}}");
  }
  Trace& add(const std::string& event) {
    events_.push_back(event);
    return *this;
  }
  // A top-level key of the trace and its JSON value, as torch's add_metadata_json writes one.
  Trace& meta(const std::string& key, const std::string& json) {
    meta_ += "  \"" + key + "\": " + json + ",\n";
    return *this;
  }

  std::string text() const {
    std::string head;
    if (rank_ >= 0) {
      head = "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + std::to_string(rank_) +
             ", \"world_size\": 2},\n";
    }
    return kineto_text(events_, head + meta_);
  }

 private:
  static std::string num(double v) { return kineto_number(v); }
  int rank_;
  std::vector<std::string> events_;
  std::string meta_;
};

// HTA's temporal breakdown's four times (us): the kernels' span, idle, computation, the rest.
void expect_times(const Temporal& t, double kernel, double idle, double compute,
                  double non_compute) {
  EXPECT_EQ(t.kernel_time_us, kernel);
  EXPECT_EQ(t.idle_time_us, idle);
  EXPECT_EQ(t.compute_time_us, compute);
  EXPECT_EQ(t.non_compute_time_us, non_compute);
}

class ExplainTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::fresh_test_dir("vxperf-explain"); }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    if (name.size() > 3 && name.substr(name.size() - 3) == ".gz") {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
      gzclose(f);
    } else {
      std::ofstream(path) << text;
    }
    return path;
  }

  fs::path dir_;
};

// Three profiler steps (the last is dropped), four streams: computation on 7 and 10 (nested on
// 10), a copy on 8, NCCL on 9; a kernel launched in the last step and one with no launch.
Trace three_streams() {
  Trace t;
  t.step(1, 0, 100).step(2, 100, 100).step(3, 200, 100);
  t.launch(10, 5, 1).kernel("gemm_a", 7, 20, 30, 1);     // [20, 50]
  t.launch(12, 5, 2).kernel("gemm_b", 7, 60, 20, 2);     // [60, 80]: 10 after, launched before
  t.launch(120, 60, 3).kernel("gemm_a", 7, 130, 10, 3);  // [130, 140]: launched after 80 ended
  t.launch(30, 5, 4, "cudaMemcpyAsync")
      .kernel("Memcpy HtoD (Pageable -> Device)", 8, 40, 30, 4, "gpu_memcpy");  // [40, 70]
  t.launch(140, 5, 5).kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 9, 145, 20, 5);
  t.launch(210, 5, 6).kernel("gemm_late", 7, 215, 10, 6);  // launched in the last step
  t.kernel("orphan", 7, 170, 5, 99);                       // no launch anywhere
  t.launch(55, 2, 7).kernel("gemm_c", 10, 60, 40, 7);      // [60, 100]
  t.launch(56, 12, 8).kernel("gemm_d", 10, 70, 10,
                             8);                      // [70, 80] inside it, shorter than its launch
  t.launch(5, 5, 9).kernel("gemm_e", 8, 150, 10, 9);  // [150, 160], 140 us after its launch
  return t;
}

TEST_F(ExplainTest, HtaNumbersOfThreeStreamsByHand) {
  const Explanation e = explain_traces({write("rank0.json", three_streams().text())}, {});
  ASSERT_EQ(e.ranks.size(), 1u);
  const RankExplanation& r = e.ranks[0];
  EXPECT_EQ(r.steps, (std::vector<std::int64_t>{1, 2}));
  // Device rows: 20..165; their union [20,100] + [130,140] + [145,165] = 110; computation
  // [20,50] + [60,100] + [130,140] + [150,160] = 90.
  expect_times(r.temporal, 145, 35, 90, 20);
  EXPECT_DOUBLE_EQ(*r.temporal.idle_pct, 24.14);     // 35/145
  EXPECT_DOUBLE_EQ(*r.temporal.compute_pct, 62.07);  // 90/145
  EXPECT_DOUBLE_EQ(*r.temporal.non_compute_pct, 13.79);
  // NCCL [145,165], computation under it [150,160].
  EXPECT_DOUBLE_EQ(*r.comm_comp_overlap_pct, 50.0);
  // 20-40 C, 40-50 C+M, 50-60 M, 60-70 C+M, 70-100 C, 130-140 C, 145-150 N, 150-160 C+N, 160-165 N.
  EXPECT_EQ(r.kernel_types.at("COMPUTATION"), 60);
  EXPECT_EQ(r.kernel_types.at("COMPUTATION overlapping MEMORY"), 20);
  EXPECT_EQ(r.kernel_types.at("MEMORY"), 10);
  EXPECT_EQ(r.kernel_types.at("COMMUNICATION"), 10);
  EXPECT_EQ(r.kernel_types.at("COMPUTATION overlapping COMMUNICATION"), 10);
  EXPECT_DOUBLE_EQ(e.kernel_types_pct.at("COMPUTATION"), 54.5);  // 60/110
  EXPECT_DOUBLE_EQ(e.kernel_types_pct.at("COMPUTATION overlapping MEMORY"), 18.2);
  EXPECT_DOUBLE_EQ(e.kernel_types_pct.at("MEMORY"), 9.1);
  // Per stream: 7: 10 us kernel wait (launched before), 50 us host wait (launched after);
  // 8: 80 us other; 9: one kernel, no gap; 10: the nested kernel's gap is -30 (kernel wait).
  ASSERT_EQ(r.idle_by_stream.size(), 4u);
  const StreamIdle& s7 = r.idle_by_stream[0];
  EXPECT_EQ(s7.stream, 7);
  EXPECT_EQ(s7.host_wait_us, 50);
  EXPECT_EQ(s7.kernel_wait_us, 10);
  EXPECT_EQ(s7.other_us, 0);
  EXPECT_DOUBLE_EQ(*s7.host_wait_ratio, 0.83);
  EXPECT_DOUBLE_EQ(*s7.kernel_wait_ratio, 0.17);
  EXPECT_EQ(r.idle_by_stream[1].other_us, 80);
  EXPECT_DOUBLE_EQ(*r.idle_by_stream[1].other_ratio, 1.0);
  EXPECT_FALSE(r.idle_by_stream[2].host_wait_ratio.has_value());
  EXPECT_EQ(r.idle_by_stream[3].kernel_wait_us, -30);
  EXPECT_DOUBLE_EQ(*r.idle_by_stream[3].kernel_wait_ratio, 1.0);
  // Kernels: gemm_a twice (30, 10); the late and the orphan kernels are out of the window.
  ASSERT_GE(r.kernels.size(), 7u);
  EXPECT_EQ(r.kernels[0].name, "gemm_a");
  EXPECT_EQ(r.kernels[0].count, 2);
  EXPECT_EQ(r.kernels[0].sum_us, 40);
  EXPECT_EQ(r.kernels[0].max_us, 30);
  EXPECT_EQ(r.kernels[0].min_us, 10);
  EXPECT_DOUBLE_EQ(r.kernels[0].std_us, std::sqrt(200.0));
  for (const KernelStats& k : r.kernels) {
    EXPECT_NE(k.name, "gemm_late");
    EXPECT_NE(k.name, "orphan");
  }
  // Launches: 8 pairs; one launch of 60 us, one kernel 140 us late, gemm_d shorter than its launch.
  EXPECT_EQ(r.launches.n_events, 8);
  EXPECT_EQ(r.launches.n_long_runtime, 1);
  EXPECT_EQ(r.launches.n_long_launch_delay, 1);
  EXPECT_EQ(r.launches.n_short_gpu, 1);
  EXPECT_TRUE(e.problems.empty());
}

TEST_F(ExplainTest, TheSameGzippedAndInJson) {
  const std::string text = three_streams().text();
  const Explanation plain = explain_traces({write("a.json", text)}, {});
  const Explanation gz = explain_traces({write("b.json.gz", text)}, {});
  std::string a = explanation_json(plain), b = explanation_json(gz);
  a.replace(a.find("a.json"), 6, "X");
  b.replace(b.find("b.json.gz"), 9, "X");
  EXPECT_EQ(a, b);
  EXPECT_NE(a.find("\"kernel_time_us\": 145"), std::string::npos);
  EXPECT_NE(a.find("\"comm_comp_overlap_pct\": 50"), std::string::npos);
}

// One fractional ts rounds every row (HTA's ns rounding): end = floor(ts + dur), ts = ceil(ts).
TEST_F(ExplainTest, AFractionalTimestampRoundsTheWholeFile) {
  Trace t;
  t.launch(1, 2, 1).kernel("k1", 7, 10.4, 2.3, 1);  // [11, 12]
  t.launch(3, 2, 2).kernel("k2", 7, 12.9, 0.2, 2);  // [13, 13]: dur 0
  t.launch(5, 2, 3).kernel("k3", 7, 20.5, 0.4, 3);  // [21, 20]: dur -1
  const Explanation e = explain_traces({write("r.json", t.text())}, {});
  const RankExplanation& r = e.ranks.at(0);
  // Span 11..20 = 9; union 1 + 0 + (-1) = 0, all of it computation.
  expect_times(r.temporal, 9, 9, 0, 0);
  // Stream 7: gaps 13 - 12 = 1 and 21 - 13 = 8, both kernel wait.
  EXPECT_EQ(r.idle_by_stream.at(0).kernel_wait_us, 9);
  EXPECT_TRUE(r.steps.empty());
  // k3's -1 us is said; HTA's assertions hold (non-compute 0), so its numbers stand as they are.
  ASSERT_EQ(e.problems.size(), 1u);
  EXPECT_NE(e.problems[0].find("1 rows (1 on the device) have a negative duration after HTA's "
                               "rounding to whole us, e.g. \"k3\" at ts 20.5, dur 0.4 -> -1 us"),
            std::string::npos)
      << e.problems[0];
}

// All-integer ts: nothing is rounded, a fractional dur stays.
TEST_F(ExplainTest, IntegerTimestampsKeepAFractionalDuration) {
  Trace t;
  t.launch(1, 2, 1).kernel("k1", 7, 10, 2.5, 1);
  t.launch(3, 2, 2).kernel("k2", 7, 20, 1.25, 2);
  const RankExplanation r = explain_traces({write("r.json", t.text())}, {}).ranks.at(0);
  EXPECT_DOUBLE_EQ(r.temporal.kernel_time_us, 11.25);
  EXPECT_DOUBLE_EQ(r.temporal.compute_time_us, 3.75);
  EXPECT_DOUBLE_EQ(r.idle_by_stream.at(0).other_us, 0);
  EXPECT_DOUBLE_EQ(r.idle_by_stream.at(0).kernel_wait_us, 7.5);
}

TEST_F(ExplainTest, RanksFromDistributedInfoAndTypesSummedOverRanks) {
  Trace a(0), b(1);
  a.launch(0, 2, 1).kernel("gemm", 7, 10, 30, 1);
  b.launch(0, 2, 1)
      .kernel("gemm", 7, 10, 10, 1)
      .launch(1, 2, 2)
      .kernel("ncclKernel_x", 9, 30, 10, 2);
  write("b.json", b.text());  // the directory's order is by name: rank 1 first
  write("a.json", a.text());
  const Explanation e = explain_traces({dir_.string()}, {});
  ASSERT_EQ(e.ranks.size(), 2u);
  EXPECT_EQ(e.ranks[0].rank, 0);
  EXPECT_EQ(e.ranks[1].rank, 1);
  EXPECT_EQ(e.kernel_types.at("COMPUTATION"), 40);
  EXPECT_EQ(e.kernel_types.at("COMMUNICATION"), 10);
  EXPECT_DOUBLE_EQ(e.kernel_types_pct.at("COMPUTATION"), 80.0);
  EXPECT_FALSE(e.ranks[0].comm_comp_overlap_pct.has_value());
  EXPECT_DOUBLE_EQ(*e.ranks[1].comm_comp_overlap_pct, 0.0);
}

// The waterfall of one request: its stages and the two denoising steps, against a record that
// prices the transformer's two calls at 150 us at the peak.
TEST_F(ExplainTest, WaterfallAddsUpToTheSpanAndPricesFromRecords) {
  Trace t(0);
  t.range("request 0", 0, 1000).range("text_encoder", 10, 90).range("transformer", 100, 300);
  t.range("transformer", 400, 300).range("vae_dec", 700, 250);
  t.launch(20, 2, 1).kernel("te_gemm", 7, 30, 50, 1);                 // [30, 80]
  t.launch(110, 2, 2).kernel("gemm", 7, 120, 100, 2);                 // [120, 220]
  t.launch(115, 2, 3).kernel("ncclKernel_AllReduce", 9, 200, 60, 3);  // [200, 260]
  t.launch(300, 2, 4).kernel("gemm", 7, 310, 40, 4);                  // [310, 350]
  t.launch(410, 2, 5).kernel("gemm", 7, 420, 100, 5);                 // [420, 520]
  t.launch(411, 2, 6, "cudaMemcpyAsync").kernel("Memcpy DtoD", 8, 530, 10, 6, "gpu_memcpy");
  t.launch(412, 2, 7).kernel("gemm", 7, 600, 50, 7);                         // [600, 650]
  t.launch(450, 2, 9, "cudaLaunchKernel", 2).kernel("gemm", 7, 650, 10, 9);  // autograd thread
  t.launch(710, 2, 8).kernel("vae_conv", 7, 720, 180, 8);                    // [720, 900]
  RequestRecord q;
  q.req = 0;
  q.e2e_s = 0.001;
  q.stages = {{"transformer", 2, 0.6, 0.3, 0, 0.3, 0.3}};  // 0.6 ms in the transformer
  DitThroughput d;
  d.tflops = 100;
  d.peak_tflops = 400;
  d.mfu = 0.25;  // ideal: 0.25 * 600 us = 150 us, 75 us a call
  q.dit = d;
  const std::string records = write("records.jsonl", to_json_line(q) + "\n");
  const Explanation e = explain_traces({write("r.json", t.text())}, {});
  ASSERT_EQ(e.records_files, std::vector<std::string>{records});
  const std::vector<WaterfallRow>& w = e.ranks.at(0).waterfall;
  auto find = [&](const std::string& kind, const std::string& range, std::int64_t index = -1) {
    for (const WaterfallRow& row : w) {
      if (row.kind == kind && row.range == range && row.step_index == index) return row;
    }
    ADD_FAILURE() << kind << " " << range << " " << index << " missing";
    return WaterfallRow{};
  };
  constexpr double us = 1e-6;
  // Step 0: computation 140, NCCL exposed 220..260, a 50 us gap whose kernel was launched after
  // it opened (host wait).
  const WaterfallRow s0 = find("denoising_step", "transformer", 0);
  EXPECT_NEAR(s0.span_s, 230 * us, 1e-12);
  EXPECT_NEAR(*s0.ideal_s, 75 * us, 1e-12);
  EXPECT_NEAR(s0.kernel_excess_s, 65 * us, 1e-12);
  EXPECT_NEAR(s0.exposed_comm_s, 40 * us, 1e-12);
  EXPECT_NEAR(s0.idle_host_wait_s, 50 * us, 1e-12);
  EXPECT_NEAR(*s0.mfu, 75.0 / 230, 1e-12);
  // Step 1: computation 100 + 60 (the autograd thread's kernel by time), a copy 10, a 10 us
  // kernel wait, a 60 us gap launched long before (other).
  const WaterfallRow s1 = find("denoising_step", "transformer", 1);
  EXPECT_NEAR(s1.span_s, 240 * us, 1e-12);
  EXPECT_NEAR(s1.kernel_excess_s, (160 - 75) * us, 1e-12);
  EXPECT_NEAR(s1.memory_s, 10 * us, 1e-12);
  EXPECT_NEAR(s1.idle_kernel_wait_s, 10 * us, 1e-12);
  EXPECT_NEAR(s1.idle_other_s, 60 * us, 1e-12);
  // The request: 30..900; computation 530, NCCL 40, copy 10; gaps: host 40 + 50 + 70 + 60,
  // kernel 10, other 60.
  const WaterfallRow req = find("request", "request");
  EXPECT_NEAR(req.span_s, 870 * us, 1e-12);
  EXPECT_NEAR(*req.ideal_s, 150 * us, 1e-12);
  EXPECT_NEAR(req.kernel_excess_s, 380 * us, 1e-12);
  EXPECT_NEAR(req.idle_host_wait_s, 220 * us, 1e-12);
  EXPECT_NEAR(req.host_s, 1000 * us, 1e-12);
  const WaterfallRow te = find("stage", "text_encoder");
  EXPECT_FALSE(te.ideal_s.has_value());
  EXPECT_NEAR(te.kernel_excess_s, 50 * us, 1e-12);  // unpriced: all its computation
  // Every row adds up to its span.
  for (const WaterfallRow& row : w) {
    const double sum = row.ideal_s.value_or(0) + row.kernel_excess_s + row.exposed_comm_s +
                       row.memory_s + row.other_s + row.idle_host_wait_s + row.idle_kernel_wait_s +
                       row.idle_other_s;
    EXPECT_NEAR(sum, row.span_s, 1e-12) << row.kind << " " << row.range;
  }
  // The per-index rows are the transformer's calls, said so in the text and on the page (their
  // JSON kind stays "denoising_step"); the page's axes read whole microseconds, not "1e+03".
  const std::string text = explanation_text(e), page = explanation_html(e);
  EXPECT_NE(text.find("    transformer call #1 "), std::string::npos) << text;
  EXPECT_EQ(text.find("transformer #"), std::string::npos) << text;
  EXPECT_NE(page.find("<td>transformer call #0</td><td>call</td>"), std::string::npos);
  EXPECT_EQ(page.find(">denoising_step<"), std::string::npos);
  EXPECT_EQ(page.find("1e+03"), std::string::npos);
  EXPECT_NE(page.find(">1000</text>"), std::string::npos);
}

TEST_F(ExplainTest, BadFilesAreSaidAndTheOthersAnalysed) {
  const std::string good = three_streams().text();
  write("0-good.json", good);
  write("1-truncated.json", good.substr(0, good.size() / 2));
  write("2-truncated.json.gz", good);
  {  // cut the compressed file short
    const fs::path p = dir_ / "2-truncated.json.gz";
    fs::resize_file(p, fs::file_size(p) / 2);
  }
  write("3-corrupt.json", "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": }]}");
  write("4-not-a-trace.json", "[1, 2, 3]");
  Trace same_rank(0);
  same_rank.launch(0, 1, 1).kernel("k", 7, 1, 1, 1);
  write("5-rank0-again.json", same_rank.text());
  const Explanation e = explain_traces({dir_.string()}, {});
  ASSERT_EQ(e.ranks.size(), 1u);
  EXPECT_EQ(e.ranks[0].temporal.kernel_time_us, 145);
  auto said = [&](const std::string& file, const std::string& what) {
    for (const std::string& p : e.problems) {
      if (p.find(file) != std::string::npos && p.find(what) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(said("1-truncated.json", "truncated"));
  EXPECT_TRUE(said("2-truncated.json.gz", "ends early"));
  EXPECT_TRUE(said("3-corrupt.json", "not valid JSON"));
  EXPECT_TRUE(said("4-not-a-trace.json", "not a JSON object"));
  EXPECT_TRUE(said("5-rank0-again.json", "rank 0 again"));
  EXPECT_TRUE(said("0-good.json", "no \"rank\""));
  EXPECT_THROW(explain_traces({(dir_ / "missing.json").string()}, {}), std::invalid_argument);
}

// A stream written as a float is the integer it holds; one past 64 bits names no stream (found by
// the trace fuzzer: the cast was undefined), so its kernel is no device row.
TEST_F(ExplainTest, AFloatStreamPast64BitsIsNoStream) {
  auto trace = [](const char* stream) {
    return std::string(R"({"traceEvents": [
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
       "ts": 1, "dur": 2, "args": {"correlation": 1}},
      {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
       "args": {"stream": )") +
           stream + R"(, "correlation": 1}}]})";
  };
  ExplainOptions replay;
  replay.replay = ReplayRequest{};
  const Explanation in_range = explain_traces({write("seven.json", trace("7.0"))}, replay);
  EXPECT_TRUE(in_range.ranks.at(0).has_device_rows);
  const Explanation past = explain_traces({write("big.json", trace("1e30"))}, replay);
  EXPECT_FALSE(past.ranks.at(0).has_device_rows);
}

TEST_F(ExplainTest, ACpuOnlyProfileGivesItsHostRanges) {
  Trace t;
  t.range("request 0", 0, 500).range("transformer", 10, 100).host("aten::mm", "cpu_op", 20, 50);
  const Explanation e = explain_traces({write("cpu.json", t.text())}, {});
  const RankExplanation& r = e.ranks.at(0);
  EXPECT_FALSE(r.has_device_rows);
  EXPECT_EQ(r.temporal.kernel_time_us, 0);
  ASSERT_FALSE(r.waterfall.empty());
  EXPECT_NEAR(r.waterfall[0].host_s, 500e-6, 1e-12);
  EXPECT_EQ(r.waterfall[0].span_s, 0);
  // Said once, in its rank's section (the command says it on standard error beside JSON).
  EXPECT_TRUE(e.problems.empty());
  const std::string text = explanation_text(e);
  // No ProfilerStep#N (vxperf's "step N" ranges are others): what was read instead is said.
  EXPECT_EQ(text.rfind("vxperf explain: 1 rank(s); profiler steps analysed: none (no "
                       "ProfilerStep#N in the trace: all of it read)\n",
                       0),
            0U)
      << text;
  const auto at = text.find("CPU-only");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.find("CPU-only", at + 1), std::string::npos) << text;
  // A new user's torch.profiler run with ProfilerActivity.CPU alone: said plainly, with what it
  // still tells, and no device columns of zeros that read as measured.
  EXPECT_NE(text.find("  the trace has no device activity (a CPU-only profile: record "
                      "ProfilerActivity.CUDA too for device time); what it still tells is each "
                      "range's host time\n  ranges (ms, mean per range: host time)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    request                        1    0.500\n"), std::string::npos)
      << text;
  for (const char* device : {"span", "kernwait", "  device time ", "MFU", "0.000"}) {
    EXPECT_EQ(text.find(device), std::string::npos) << device << "\n" << text;
  }
  const std::string html = explanation_html(e);
  EXPECT_NE(html.find("<p>The trace has no device activity (a CPU-only profile"),
            std::string::npos);
  for (const char* device : {"Temporal breakdown", "device span per range", "Device time"}) {
    EXPECT_EQ(html.find(device), std::string::npos) << device;
  }
}

// Untrusted input: a name of a megabyte, an event nested a million deep, markup in a name.
TEST_F(ExplainTest, HostileNamesAndNestingCostMemoryNotACrash) {
  Trace t;
  const std::string big(1 << 20, 'x');
  t.launch(0, 2, 1).kernel(big, 7, 10, 5, 1);
  t.launch(1, 2, 2).kernel("<script>alert(1)</script>", 7, 20, 5, 2);
  t.add("{\"ph\": \"X\", \"cat\": \"kernel\", \"args\": " + std::string(1000000, '[') +
        std::string(1000000, ']') + "}");
  const Explanation e = explain_traces({write("hostile.json", t.text())}, {});
  ASSERT_EQ(e.ranks.size(), 1u);
  EXPECT_EQ(e.ranks[0].kernels.size(), 2u);
  EXPECT_NE(e.problems.at(0).find("nested deeper"), std::string::npos);
  const std::string page = explanation_html(e);
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert"), std::string::npos);
}

// A row of the waterfall, or a failure naming it.
const WaterfallRow* find_row(const std::vector<WaterfallRow>& rows, const std::string& kind,
                             const std::string& range, std::int64_t index = -1) {
  for (const WaterfallRow& row : rows) {
    if (row.kind == kind && row.range == range && row.step_index == index) return &row;
  }
  ADD_FAILURE() << kind << " " << range << " " << index << " missing";
  static const WaterfallRow kNone;
  return &kNone;
}

std::set<std::string> ranges_of(const std::vector<WaterfallRow>& rows, const std::string& kind) {
  std::set<std::string> out;
  for (const WaterfallRow& row : rows) {
    if (row.kind == kind) out.insert(row.range);
  }
  return out;
}

void expect_parts_add_up(const std::vector<WaterfallRow>& rows) {
  for (const WaterfallRow& row : rows) {
    const double sum = row.ideal_s.value_or(0) + row.kernel_excess_s + row.exposed_comm_s +
                       row.memory_s + row.other_s + row.idle_host_wait_s + row.idle_kernel_wait_s +
                       row.idle_other_s;
    EXPECT_NEAR(sum, row.span_s, 1e-12) << row.kind << " " << row.range;
  }
}

bool said(const Explanation& e, const std::string& what) {
  for (const std::string& p : e.problems) {
    if (p.find(what) != std::string::npos) return true;
  }
  return false;
}

// A window of steps [first, last] priced at `flops_per_step` on a 1-TFLOP/s peak, FLOPs
// coefficient 3 (a forward and a backward of two), as a records line.
std::string window_line(std::int64_t first, std::int64_t last, double flops_per_step,
                        bool priced = true) {
  TrainWindowRecord w;
  w.step_first = first;
  w.step_last = last;
  w.steps = last - first + 1;
  TrainThroughput t;
  t.samples = 1;
  t.wall_s = 1;
  if (priced) {
    t.priced = true;
    t.peak_tflops = 1;
    t.flops_per_step = flops_per_step;
    t.flops_coef = 3;
    t.priced_steps = w.steps;
  }
  w.throughput = t;
  return to_json_line(w) + "\n";
}

// A request record listing `stages` (name, calls, total ms), priced at MFU `mfu` when given.
std::string request_line(std::int64_t req,
                         const std::vector<std::tuple<std::string, std::int64_t, double>>& stages,
                         std::optional<double> mfu = std::nullopt) {
  RequestRecord q;
  q.req = req;
  q.e2e_s = 0.001;
  for (const auto& [name, calls, ms] : stages) {
    q.stages.push_back({name, calls, ms, ms / static_cast<double>(calls), 0, 0, 0});
  }
  if (mfu) {
    DitThroughput d;
    d.tflops = 1;
    d.peak_tflops = 2;
    d.mfu = *mfu;
    q.dit = d;
  }
  return to_json_line(q) + "\n";
}

// Two training steps, each: step [0, 1000] > micro_step [10, 900] > `chain` (ranges torch opens:
// DDP's or FSDP's forward, a compiled region and its function, nested in that order) > model_call
// [30, 400]; bwd [510, 800] and opt [910, 990]. Kernels: the forward's [100, 300], one launched
// inside the chain but outside the model call [460, 480], the backward's [600, 700], the
// optimizer's [930, 950]; all computation.
Trace steps_under(const std::vector<std::string>& chain) {
  Trace t(0);
  for (int s = 0; s < 2; ++s) {
    const double b = 1000.0 * s;
    const long c = 10L * s;
    t.range("step " + std::to_string(s), b, 1000).range("micro_step", b + 10, 890);
    for (std::size_t k = 0; k < chain.size(); ++k) {
      const double d = static_cast<double>(k);
      t.range(chain[k], b + 20 + d, 480 - 2 * d);
    }
    t.range("model_call", b + 30, 370).range("bwd", b + 510, 290).range("opt", b + 910, 80);
    t.launch(b + 40, 2, c + 1).kernel("gemm_fwd", 7, b + 100, 200, c + 1);
    t.launch(b + 450, 2, c + 2).kernel("gemm_hook", 7, b + 460, 20, c + 2);
    t.launch(b + 520, 2, c + 3).kernel("gemm_bwd", 7, b + 600, 100, c + 3);
    t.launch(b + 920, 2, c + 4).kernel("adam", 7, b + 930, 20, c + 4);
  }
  return t;
}

// A range belongs to the nearest of vxperf's ranges above it: the forward's model call is a phase
// of its step whatever torch opened between them, and torch's ranges are no phase.
// A CPU run's records beside its CPU-only profile (VIDEOX_PERF_PROFILE without CUDA activity): no
// waterfall takes FLOPs there, so records that price nothing are no problem to say.
TEST_F(ExplainTest, UnpricedRecordsBesideACpuOnlyProfileAreNoProblem) {
  Trace t;
  t.range("request 0", 0, 500).range("transformer", 10, 100).host("aten::mm", "cpu_op", 20, 50);
  const std::string trace = write("cpu.json", t.text());
  ExplainOptions options;
  options.records = {write("cpu.jsonl", request_line(0, {{"transformer", 1, 0.09}}))};
  const Explanation e = explain_traces({trace}, options);
  EXPECT_TRUE(e.problems.empty()) << e.problems.at(0);
  EXPECT_EQ(explanation_text(e).find("problem"), std::string::npos) << explanation_text(e);
  // With device rows the same records are said to price nothing.
  Trace gpu;
  gpu.range("request 0", 0, 500).range("transformer", 10, 100);
  gpu.launch(20, 2, 1).kernel("gemm", 7, 30, 40, 1);
  const Explanation d = explain_traces({write("gpu.json", gpu.text())}, options);
  ASSERT_EQ(d.problems.size(), 1U);
  EXPECT_NE(d.problems[0].find("price none of them"), std::string::npos) << d.problems[0];
}

TEST_F(ExplainTest, APhaseUnderTorchsOwnRangesIsStillItsStepsPhase) {
  const std::string records = write("records.jsonl", window_line(0, 1, 3e8));  // 300 us a step
  const std::vector<std::vector<std::string>> chains = {
      {},
      {"DistributedDataParallel.forward"},
      {"FullyShardedDataParallel.forward"},
      {"Torch-Compiled Region", "CompiledFunction"},
      {"DistributedDataParallel.forward", "my_forward_wrapper"}};
  constexpr double us = 1e-6;
  for (const auto& chain : chains) {
    const std::string name = "t" + std::to_string(chain.size()) + ".json";
    ExplainOptions options;
    options.records = {records};
    const Explanation e = explain_traces({write(name, steps_under(chain).text())}, options);
    SCOPED_TRACE(chain.empty() ? std::string("no range between") : chain[0]);
    const std::vector<WaterfallRow>& w = e.ranks.at(0).waterfall;
    EXPECT_EQ(ranges_of(w, "phase"), (std::set<std::string>{"model_call", "bwd", "opt"}));
    EXPECT_EQ(ranges_of(w, "micro_step"), std::set<std::string>{"micro_step"});
    // The forward: 2 calls of 200 us, a third of the 300 us step's FLOPs each.
    const WaterfallRow* fwd = find_row(w, "phase", "model_call");
    EXPECT_EQ(fwd->count, 2);
    EXPECT_NEAR(fwd->span_s, 400 * us, 1e-12);
    EXPECT_NEAR(*fwd->ideal_s, 200 * us, 1e-12);
    EXPECT_NEAR(*fwd->mfu, 0.5, 1e-12);
    const WaterfallRow* bwd = find_row(w, "phase", "bwd");
    EXPECT_EQ(bwd->count, 2);
    EXPECT_NEAR(*bwd->ideal_s, 400 * us, 1e-12);
    EXPECT_NEAR(bwd->kernel_excess_s, -200 * us, 1e-12);  // 200 us of computation
    // The kernel launched in torch's range outside the call is the micro-step's:
    // [100, 300] + [460, 480] + [600, 700] = 320 us of computation over a span of 600 us.
    const WaterfallRow* micro = find_row(w, "micro_step", "micro_step");
    EXPECT_EQ(micro->count, 2);
    EXPECT_NEAR(micro->span_s, 1200 * us, 1e-12);
    EXPECT_NEAR(micro->kernel_excess_s, 640 * us, 1e-12);
    const WaterfallRow* step = find_row(w, "train_step", "step");
    EXPECT_EQ(step->count, 2);
    EXPECT_NEAR(step->span_s, 1700 * us, 1e-12);  // [100, 950] twice
    EXPECT_NEAR(*step->ideal_s, 600 * us, 1e-12);
    expect_parts_add_up(w);
    EXPECT_TRUE(e.problems.empty()) << e.problems.at(0);
    EXPECT_EQ(e.flops_from, std::vector<std::string>{records});
  }
}

// A collective's own range inside a request (NCCL's and gloo's record_function, c10d's op) is no
// stage; its kernels are the request's, or the stage's it was launched in.
TEST_F(ExplainTest, ACollectivesOwnRangeInARequestIsNoStage) {
  Trace t(0);
  t.range("request 0", 0, 1000).range("text_encoder", 10, 90);
  t.range("nccl:all_reduce", 110, 40).range("gloo:all_reduce", 160, 10);
  t.range("c10d::allreduce_", 175, 10);
  t.range("transformer", 200, 200).range("nccl:all_gather", 300, 50);
  t.range("transformer", 400, 200).range("vae_dec", 600, 300);
  t.launch(20, 2, 1).kernel("te_gemm", 7, 30, 50, 1);                 // [30, 80]
  t.launch(120, 2, 2).kernel("ncclKernel_AllReduce", 9, 130, 60, 2);  // [130, 190]
  t.launch(210, 2, 3).kernel("gemm", 7, 220, 160, 3);                 // [220, 380]
  t.launch(310, 2, 4).kernel("ncclKernel_AllGather", 9, 385, 10, 4);  // [385, 395]
  t.launch(410, 2, 5).kernel("gemm", 7, 420, 160, 5);                 // [420, 580]
  t.launch(610, 2, 6).kernel("vae_conv", 7, 620, 260, 6);             // [620, 880]
  const Explanation e = explain_traces({write("r.json", t.text())}, {});
  const std::vector<WaterfallRow>& w = e.ranks.at(0).waterfall;
  EXPECT_EQ(ranges_of(w, "stage"),
            (std::set<std::string>{"text_encoder", "transformer", "vae_dec"}));
  EXPECT_EQ(find_row(w, "stage", "transformer")->count, 2);
  constexpr double us = 1e-6;
  // Step 0: its gemm and the all-gather launched inside it: 160 computation, 10 exposed
  // communication, a 5 us kernel wait (launched at 310, before the gap opened at 380).
  const WaterfallRow* s0 = find_row(w, "denoising_step", "transformer", 0);
  EXPECT_NEAR(s0->span_s, 175 * us, 1e-12);
  EXPECT_NEAR(s0->kernel_excess_s, 160 * us, 1e-12);
  EXPECT_NEAR(s0->exposed_comm_s, 10 * us, 1e-12);
  EXPECT_NEAR(s0->idle_kernel_wait_s, 5 * us, 1e-12);
  EXPECT_NEAR(find_row(w, "denoising_step", "transformer", 1)->span_s, 160 * us, 1e-12);
  // The request: 30..880; computation 50 + 160 + 160 + 260, communication 60 + 10; gaps of
  // host wait 50 + 30 + 25 + 40, kernel wait 5.
  const WaterfallRow* req = find_row(w, "request", "request");
  EXPECT_NEAR(req->span_s, 850 * us, 1e-12);
  EXPECT_NEAR(req->kernel_excess_s, 630 * us, 1e-12);
  EXPECT_NEAR(req->exposed_comm_s, 70 * us, 1e-12);
  EXPECT_NEAR(req->idle_host_wait_s, 145 * us, 1e-12);
  EXPECT_NEAR(req->idle_kernel_wait_s, 5 * us, 1e-12);
  expect_parts_add_up(w);
  // No records anywhere: nothing priced, and the text says why there is no MFU.
  EXPECT_TRUE(e.records_files.empty());
  EXPECT_NE(explanation_text(e).find("FLOPs: no records found"), std::string::npos);
}

// Two requests whose denoising loop the program wraps in its own range: the transformer's calls
// are still the requests' stage and denoising steps. Stages known three ways: the stage table's
// names, the names vxperf declared in the trace ("vxperf_ranges": a program's own "refiner"), the
// names a request's record lists ("upscaler", request 0's alone: request 1 has no record).
TEST_F(ExplainTest, AProgramsOwnRangeAroundTheDenoisingLoopHidesNoStage) {
  Trace t(0);
  t.meta("vxperf_ranges", "[\"transformer\", \"refiner\"]");
  long c = 0;
  auto work = [&](const std::string& stage, double ts, double dur, double k0, double k1) {
    t.range(stage, ts, dur);
    ++c;
    t.launch(ts + 5, 2, c).kernel(stage + "_gemm", 7, k0, k1 - k0, c);
  };
  for (int r = 0; r < 2; ++r) {
    const double b = 1000.0 * r;
    t.range("request " + std::to_string(r), b, 1000);
    work("text_encoder", b + 10, 40, b + 20, b + 45);
    t.range("denoising loop", b + 60, 640);
    for (int k = 0; k < 3; ++k) {
      const double at = b + 100 + 150 * k;
      work("transformer", at, 100, at + 10, at + 90);
    }
    t.range("scheduler.step", b + 210, 30);
    work("refiner", b + 550, 100, b + 560, b + 600);
    work("upscaler", b + 720, 80, b + 730, b + 790);
    work("vae_dec", b + 800, 150, b + 810, b + 940);
  }
  const std::string records = write("records.jsonl", request_line(0,
                                                                  {{"text_encoder", 1, 0.025},
                                                                   {"transformer", 3, 0.24},
                                                                   {"refiner", 1, 0.04},
                                                                   {"upscaler", 1, 0.06},
                                                                   {"vae_dec", 1, 0.13}},
                                                                  0.5));
  const Explanation e = explain_traces({write("r.json", t.text())}, {});
  const std::vector<WaterfallRow>& w = e.ranks.at(0).waterfall;
  EXPECT_EQ(ranges_of(w, "stage"), (std::set<std::string>{"text_encoder", "transformer", "refiner",
                                                          "upscaler", "vae_dec"}));
  EXPECT_EQ(find_row(w, "stage", "transformer")->count, 6);
  EXPECT_EQ(find_row(w, "stage", "refiner")->count, 2);
  EXPECT_EQ(find_row(w, "stage", "upscaler")->count, 1);  // request 1's is not known as a stage
  EXPECT_EQ(find_row(w, "request", "request")->count, 2);
  constexpr double us = 1e-6;
  for (int k = 0; k < 3; ++k) {
    const WaterfallRow* step = find_row(w, "denoising_step", "transformer", k);
    EXPECT_EQ(step->count, 2) << k;  // one per request, numbered within each
    EXPECT_NEAR(step->span_s, 160 * us, 1e-12) << k;
  }
  EXPECT_EQ(std::count_if(w.begin(), w.end(),
                          [](const WaterfallRow& row) { return row.kind == "denoising_step"; }),
            3);
  // Request 0 is priced from its record: MFU 0.5 over 240 us in the transformer = 120 us ideal,
  // 40 us a call; request 1 has no record, which is said.
  const RankExplanation& rank = e.ranks.at(0);
  EXPECT_EQ(rank.requests_without_record,
            (std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}}));
  EXPECT_TRUE(rank.steps_without_record.empty());
  EXPECT_TRUE(said(e, "r.json: request 1: no record in " + records + " (rank 0)"))
      << e.problems.at(0);
  EXPECT_EQ(e.flops_from, std::vector<std::string>{records});
  // The ranges the records price none of (the VAE's, request 1's) say why they have no MFU, once.
  const std::string text = explanation_text(e);
  const std::string why =
      "  MFU n/a: no FLOPs priced for the range (records price requests, transformer calls, "
      "steps, fwd and bwd)\n";
  ASSERT_NE(text.find(why), std::string::npos) << text;
  EXPECT_EQ(text.find(why, text.find(why) + 1), std::string::npos) << text;
  EXPECT_NE(explanation_html(e).find("<p>MFU n/a: no FLOPs priced for the range"),
            std::string::npos);
  // Each request alone: request 0's steps priced, request 1's not.
  for (int r = 0; r < 2; ++r) {
    Trace one(0);
    one.meta("vxperf_ranges", "[\"refiner\"]");
    one.range("request " + std::to_string(r), 0, 1000).range("denoising loop", 60, 640);
    one.range("transformer", 100, 100).launch(105, 2, 1).kernel("gemm", 7, 110, 80, 1);
    const Explanation alone =
        explain_traces({write("one" + std::to_string(r) + ".json", one.text())}, {});
    const WaterfallRow* s0 =
        find_row(alone.ranks.at(0).waterfall, "denoising_step", "transformer", 0);
    EXPECT_EQ(s0->ideal_s.has_value(), r == 0);
    if (r == 0) EXPECT_NEAR(*s0->ideal_s, 40 * us, 1e-12);
  }
  expect_parts_add_up(w);
}

TEST_F(ExplainTest, ADeclarationThatIsNoListOfNamesIsSaid) {
  Trace t(0);
  t.meta("vxperf_ranges", "[\"refiner\", 3]");
  t.range("request 0", 0, 100).range("refiner", 10, 50);
  const Explanation e = explain_traces({write("r.json", t.text())}, {});
  EXPECT_TRUE(said(e, "r.json: its \"vxperf_ranges\" is not a list of names: ignored"));
  EXPECT_TRUE(ranges_of(e.ranks.at(0).waterfall, "stage").empty());
}

// Ranges of one thread with the same start and duration (whole microseconds make them common):
// a step or request holds the other, then a micro-step, then the one written first.
TEST_F(ExplainTest, EqualRangesNestTheWayVxperfsCan) {
  Trace t(0);
  t.range("step 0", 0, 100).range("model_call", 10, 80).range("micro_step", 10, 80);
  t.launch(20, 2, 1).kernel("gemm", 7, 30, 20, 1);
  t.range("step 1", 100, 100).range("micro_step", 105, 90);
  t.range("model_call", 110, 80).range("DistributedDataParallel.forward", 110, 80);
  t.launch(120, 2, 2).kernel("gemm", 7, 130, 40, 2);
  t.range("step 2", 200, 100).range("micro_step", 205, 90);
  t.range("DistributedDataParallel.forward", 210, 80).range("model_call", 210, 80);
  t.launch(220, 2, 3).kernel("gemm", 7, 230, 40, 3);
  const Explanation e = explain_traces({write("r.json", t.text())}, {});
  const std::vector<WaterfallRow>& w = e.ranks.at(0).waterfall;
  const WaterfallRow* fwd = find_row(w, "phase", "model_call");
  EXPECT_EQ(fwd->count, 3);
  EXPECT_NEAR(fwd->span_s, 100e-6, 1e-12);
  EXPECT_EQ(find_row(w, "micro_step", "micro_step")->count, 3);
  EXPECT_EQ(ranges_of(w, "phase"), std::set<std::string>{"model_call"});
}

// Records that hold none of the trace's requests and steps price nothing, and that is said; those
// that hold some name the others.
TEST_F(ExplainTest, RangesWithoutARecordAreNamed) {
  Trace t(0);
  t.range("request 5", 0, 100).launch(10, 2, 1).kernel("gemm", 7, 20, 50, 1);
  t.range("request 6", 100, 100).launch(110, 2, 2).kernel("gemm", 7, 120, 50, 2);
  t.range("step 3", 200, 100).launch(210, 2, 3).kernel("gemm", 7, 220, 50, 3);
  t.range("step 4", 300, 100).launch(310, 2, 4).kernel("gemm", 7, 320, 50, 4);
  t.range("step 7", 400, 100).launch(410, 2, 5).kernel("gemm", 7, 420, 50, 5);
  const std::string trace = write("trace.json", t.text());
  {  // another run's records: requests 0 and 1, steps 10-12
    const std::string other =
        write("other.jsonl", request_line(0, {{"transformer", 1, 1}}, 0.5) +
                                 request_line(1, {{"transformer", 1, 1}}, 0.5) +
                                 window_line(10, 12, 1e8));
    ExplainOptions options;
    options.records = {other};
    const Explanation e = explain_traces({trace}, options);
    const RankExplanation& r = e.ranks.at(0);
    using Runs = std::vector<std::pair<std::int64_t, std::int64_t>>;
    EXPECT_EQ(r.requests_without_record, (Runs{{5, 6}}));
    EXPECT_EQ(r.steps_without_record, (Runs{{3, 4}, {7, 7}}));
    EXPECT_TRUE(said(e, trace + ": requests 5-6, steps 3-4, 7: no record in " + other));
    EXPECT_TRUE(said(e, other + ": none of its records is of a request or step in the traces"));
    EXPECT_TRUE(e.flops_from.empty());
    EXPECT_EQ(e.records_files, std::vector<std::string>{other});
    const std::string text = explanation_text(e);
    EXPECT_EQ(text.find("FLOPs from:"), std::string::npos);
    EXPECT_NE(text.find("FLOPs: none from the records read"), std::string::npos);
    const std::string json = explanation_json(e);
    EXPECT_NE(json.find("\"requests_without_record\": [\n    [\n     5,\n     6"),
              std::string::npos)
        << json.substr(json.find("requests_without_record"), 80);
    EXPECT_NE(json.find("\"flops_from\": []"), std::string::npos);
    EXPECT_NE(explanation_html(e).find("requests 5-6, steps 3-4, 7: no record in"),
              std::string::npos);
  }
  {  // this run's: request 5 and the window of step 3 priced, step 4 in an unpriced one
    const std::string own =
        write("own.jsonl", request_line(5, {{"transformer", 1, 1}}, 0.5) + window_line(3, 3, 1e8) +
                               window_line(4, 4, 0, false));
    ExplainOptions options;
    options.records = {own};
    const Explanation e = explain_traces({trace}, options);
    EXPECT_TRUE(said(e, trace + ": request 6, step 7: no record in " + own));
    EXPECT_EQ(e.flops_from, std::vector<std::string>{own});
    EXPECT_NE(explanation_text(e).find("FLOPs from: " + own), std::string::npos);
    // Step 3 is priced (100 us at the peak over its 50 us kernel), step 4 is not.
    const WaterfallRow* step = find_row(e.ranks.at(0).waterfall, "train_step", "step");
    EXPECT_EQ(step->count, 3);
    EXPECT_FALSE(step->ideal_s.has_value());  // one of the three has none
  }
  {  // records that hold the ranges but no FLOPs
    const std::string unpriced =
        write("unpriced.jsonl", request_line(5, {{"transformer", 1, 1}}) +
                                    request_line(6, {{"transformer", 1, 1}}) +
                                    window_line(3, 7, 0, false));
    ExplainOptions options;
    options.records = {unpriced};
    const Explanation e = explain_traces({trace}, options);
    EXPECT_TRUE(e.ranks.at(0).requests_without_record.empty());
    EXPECT_TRUE(said(e, unpriced + ": its records hold 5 of the traces' requests and steps but "
                                   "price none of them"));
    EXPECT_TRUE(e.flops_from.empty());
  }
  {  // records with FLOPs but no peak (a CPU run without VIDEOX_PERF_PEAK_TFLOPS): the fix is said
    TrainWindowRecord w;
    w.step_first = 3;
    w.step_last = 7;
    w.steps = 5;
    TrainThroughput t;
    t.samples = 1;
    t.wall_s = 1;
    t.priced = true;  // FLOPs, and no peak_tflops
    t.flops_per_step = 1e6;
    t.flops_coef = 3;
    t.priced_steps = w.steps;
    w.throughput = t;
    const std::string no_peak = write("no_peak.jsonl", to_json_line(w) + "\n");
    ExplainOptions options;
    options.records = {no_peak};
    const Explanation e = explain_traces({trace}, options);
    EXPECT_TRUE(said(e, "no peak to price them at: record with VIDEOX_PERF_PEAK_TFLOPS=auto"));
    EXPECT_TRUE(e.flops_from.empty());
  }
}

// Rounding that leaves a copy at -1 us makes HTA's union shorter than its computation: HTA
// asserts on the negative non-compute time; vxperf says so and gives the breakdown with that row
// as 0 us, and the waterfall never goes negative.
TEST_F(ExplainTest, NegativeDurationsAfterRoundingAreSaidAndNeverGoSilentlyNegative) {
  Trace t(0);
  t.range("request 0", 0, 40);
  t.launch(1.5, 2, 1).kernel("gemm", 7, 10.2, 10.3, 1);  // [11, 20]
  t.launch(3, 2, 2, "cudaMemcpyAsync")
      .kernel("Memcpy DtoD", 8, 25.5, 0.3, 2, "gpu_memcpy");  // [26, 25]: -1 us
  const Explanation e = explain_traces({write("r.json", t.text())}, {});
  const RankExplanation& r = e.ranks.at(0);
  // As HTA: span 11..25 = 14, union 9 - 1 = 8, computation 9: non-compute 14 - 9 - 6 = -1.
  // With the copy as [26, 26]: span 15, union 9, idle 6, computation 9, non-compute 0.
  expect_times(r.temporal, 15, 6, 9, 0);
  EXPECT_DOUBLE_EQ(*r.temporal.non_compute_pct, 0);
  EXPECT_DOUBLE_EQ(*r.temporal.compute_pct, 60);
  EXPECT_TRUE(said(e,
                   "r.json: 1 rows (1 on the device) have a negative duration after HTA's "
                   "rounding to whole us, e.g. \"Memcpy DtoD\" at ts 25.5, dur 0.3 -> -1 us"));
  EXPECT_TRUE(said(e,
                   "r.json: HTA's temporal breakdown stops here with an assertion "
                   "(non-compute -1 us, idle 6 us and compute 9 us of a span of 14 us"));
  EXPECT_TRUE(said(e,
                   "given with those rows as 0 us (non-compute 0 us, idle 6 us, compute 9 us "
                   "of 15 us)"));
  // The request's span: 11..26 = 15: 9 computation, no copy time, a 6 us kernel wait.
  const WaterfallRow* req = find_row(r.waterfall, "request", "request");
  EXPECT_NEAR(req->span_s, 15e-6, 1e-12);
  EXPECT_NEAR(req->kernel_excess_s, 9e-6, 1e-12);
  EXPECT_EQ(req->memory_s, 0);
  EXPECT_NEAR(req->idle_kernel_wait_s, 6e-6, 1e-12);
  expect_parts_add_up(r.waterfall);
}

}  // namespace
}  // namespace vxperf::explain
