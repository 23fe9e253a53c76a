// vxperf explain on traces built here, every expected number worked out by hand in the comments:
// HTA's analyses (streams overlapping, nested kernels, negative gaps, a missing launch, NCCL on its
// own stream, the last profiler step dropped, fractional timestamps), the waterfall against a
// records file, and bad input.
#include "vxperf/explain.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

  std::string text() const {
    std::string s = "{\n  \"schemaVersion\": 1,\n";
    if (rank_ >= 0) {
      s += "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + std::to_string(rank_) +
           ", \"world_size\": 2},\n";
    }
    s += "  \"traceEvents\": [\n";
    for (std::size_t i = 0; i < events_.size(); ++i) {
      s += "  " + events_[i] + (i + 1 < events_.size() ? ",\n" : "\n");
    }
    return s + "  ],\n  \"traceName\": \"t\"\n}\n";
  }

 private:
  static std::string num(double v) {
    if (v == std::floor(v)) return std::to_string(static_cast<long long>(v));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return buf;
  }
  int rank_;
  std::vector<std::string> events_;
};

class ExplainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vxperf-explain-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
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
  EXPECT_EQ(r.temporal.kernel_time_us, 145);
  EXPECT_EQ(r.temporal.idle_time_us, 35);
  EXPECT_EQ(r.temporal.compute_time_us, 90);
  EXPECT_EQ(r.temporal.non_compute_time_us, 20);
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
  EXPECT_EQ(r.temporal.kernel_time_us, 9);
  EXPECT_EQ(r.temporal.idle_time_us, 9);
  EXPECT_EQ(r.temporal.compute_time_us, 0);
  EXPECT_EQ(r.temporal.non_compute_time_us, 0);
  // Stream 7: gaps 13 - 12 = 1 and 21 - 13 = 8, both kernel wait.
  EXPECT_EQ(r.idle_by_stream.at(0).kernel_wait_us, 9);
  EXPECT_TRUE(r.steps.empty());
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
  ASSERT_EQ(e.problems.size(), 1u);
  EXPECT_NE(e.problems[0].find("CPU-only"), std::string::npos);
  EXPECT_NE(explanation_text(e).find("CPU-only"), std::string::npos);
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

}  // namespace
}  // namespace vxperf::explain
