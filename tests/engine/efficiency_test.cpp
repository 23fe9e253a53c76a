// Honest efficiency through the engine: skipped and partial forwards, dtype-aware and measured
// peaks, attention density, the peak cache, and their round trip through a live trace.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "replay_check.h"
#include "test_support.h"
#include "vxperf/event_script.h"
#include "vxperf/inference.h"
#include "vxperf/markers.h"
#include "vxperf/peak.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;
using testing::TestEngine;

constexpr std::int64_t kTokens = 1000;

ModelInfo small_model() { return testing::model_info(1000000, {512, 512, 4}, 16); }

double full_forward(const ModelInfo& m, double density = 1.0) {
  return forward_flops(double(m.params), m.attention, double(kTokens), double(m.text_tokens),
                       density);
}

// A request of `fractions.size()` transformer calls of 100 ms each, batch 2; fraction < 0 leaves
// the call unmarked (a full forward).
Json run(TestEngine& t, const std::vector<double>& fractions) {
  {
    RequestScope request(*t.engine, RequestOptions{0, nullptr});
    for (double f : fractions) {
      StageScope s(kTransformer, kTokens, 2);
      if (f >= 0) s.set_fraction(f);
      t.clock->advance(0.1);
    }
  }
  auto records = t.output->records();
  return Json::parse(records.back());
}

std::string temp_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "vxperf-efficiency-test/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(SkippedForwards, AreTimedButPricedAtTheirFraction) {
  TestEngine t;
  t.engine->declare_model("transformer", small_model());
  Json r = run(t, {-1, 0.0, 0.0, 0.25});
  EXPECT_EQ(r["stages"]["transformer"]["count"], 4);  // every call timed
  EXPECT_NEAR(r["stages"]["transformer"]["total_ms"].get<double>(), 400.0, 1e-6);
  const Json& dit = r["dit"];
  double per_call = full_forward(small_model()) * 2;
  EXPECT_EQ(dit["skipped_fwd"], 2);
  EXPECT_EQ(dit["effective_fwd"], 1.25);
  EXPECT_DOUBLE_EQ(dit["flops_per_fwd"].get<double>(), per_call);
  double seconds = r["stages"]["transformer"]["total_ms"].get<double>() / 1000.0;
  EXPECT_DOUBLE_EQ(dit["tflops"].get<double>(), per_call * 1.25 / seconds / 1e12);
  EXPECT_DOUBLE_EQ(dit["mfu"].get<double>(), dit["tflops"].get<double>() / 989.0);
}

TEST(SkippedForwards, NoFieldsWhenEveryCallWasFull) {
  TestEngine t;
  t.engine->declare_model("transformer", small_model());
  Json r = run(t, {-1, 1.0, -1});
  EXPECT_FALSE(r["dit"].contains("skipped_fwd"));
  EXPECT_FALSE(r["dit"].contains("effective_fwd"));
  EXPECT_FALSE(r["dit"].contains("peak_source"));
  EXPECT_FALSE(r["dit"].contains("dtype"));
  EXPECT_FALSE(r["dit"].contains("attn_density"));
  double seconds = r["stages"]["transformer"]["total_ms"].get<double>() / 1000.0;
  EXPECT_DOUBLE_EQ(r["dit"]["tflops"].get<double>(),
                   full_forward(small_model()) * 2 * 3 / seconds / 1e12);
}

TEST(SkippedForwards, NotedFromInsideOrAfterTheCall) {
  TestEngine t;
  t.engine->declare_model("transformer", small_model());
  {
    RequestScope request(*t.engine);
    {
      // A hook deep inside the forward, that does not hold the scope.
      StageScope s(kTransformer, kTokens, 1);
      note_forward_skipped(kTransformer);
      t.clock->advance(0.1);
    }
    {
      StageScope s(kTransformer, kTokens, 1);
      t.clock->advance(0.1);
    }
    // A post-forward hook that runs once the timed call has closed: the last call is marked.
    note_forward_fraction(kTransformer, 0.5);
    // The split form, as the bindings use it.
    StageMark m = begin_stage(kTransformer, kTokens, 1);
    note_forward_fraction(kTransformer, 2.0);  // clamped to a full forward
    t.clock->advance(0.1);
    end_stage(m);
  }
  note_forward_skipped(kTransformer);  // outside any request: nothing
  Json r = Json::parse(t.output->records().back());
  EXPECT_EQ(r["dit"]["skipped_fwd"], 1);
  EXPECT_EQ(r["dit"]["effective_fwd"], 1.5);
}

TEST(Peaks, DtypeFromTheModelPicksTheTablesFigure) {
  ModelInfo fp8 = small_model();
  fp8.dtype = Dtype::kFp8;
  TestEngine t;
  t.engine->declare_model("transformer", fp8);
  Json r = run(t, {-1});
  EXPECT_EQ(r["dit"]["peak_tflops"], 1979.0);
  EXPECT_EQ(r["dit"]["dtype"], "fp8");
  EXPECT_FALSE(r["dit"].contains("peak_source"));

  // The variable wins over the model; an A100 has no fp8 figure: no MFU rather than a guess.
  TestEngine a({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_DTYPE", "fp8"}});
  a.device = std::make_shared<testing::SimulatedBackend>("NVIDIA A100-SXM4-80GB");
  a.engine->set_device_backend(a.device);
  a.engine->declare_model("transformer", small_model());
  Json q = run(a, {-1});
  EXPECT_TRUE(q["dit"]["mfu"].is_null());
  EXPECT_TRUE(q["dit"]["peak_tflops"].is_null());
  EXPECT_EQ(q["dit"]["dtype"], "fp8");
}

TEST(Peaks, MeasuredPeakIsUsedWhenAutoAndMarked) {
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_PEAK_TFLOPS", "auto"}});
  EXPECT_TRUE(t.engine->wants_measured_peak());
  t.engine->declare_model("transformer", small_model());
  MeasuredPeak peak;
  peak.dtype = Dtype::kBf16;
  peak.tflops = 500.0;
  t.engine->set_measured_peak(0, peak);
  Json r = run(t, {-1});
  EXPECT_EQ(r["dit"]["peak_tflops"], 500.0);
  EXPECT_EQ(r["dit"]["peak_source"], "measured");

  // Without auto, a handed-over peak is not used: the table's stays.
  TestEngine plain;
  EXPECT_FALSE(plain.engine->wants_measured_peak());
  plain.engine->declare_model("transformer", small_model());
  plain.engine->set_measured_peak(0, peak);
  EXPECT_EQ(run(plain, {-1})["dit"]["peak_tflops"], 989.0);
}

TEST(Peaks, AutoWithoutAMeasurementSaysSoOnceAndUsesTheTable) {
  std::string dir = temp_dir("no-measurement");
  ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_PEAK_TFLOPS", "auto"}});
  t.engine->declare_model("transformer", small_model());
  run(t, {-1});
  Json r = run(t, {-1});
  EXPECT_EQ(r["dit"]["peak_tflops"], 989.0);
  EXPECT_FALSE(r["dit"].contains("peak_source"));
  int notices = 0;
  for (const auto& line : t.output->logs()) {
    if (line.find("no peak was measured for NVIDIA H100 80GB HBM3 in bf16") != std::string::npos)
      ++notices;
  }
  EXPECT_EQ(notices, 1);
  ::unsetenv("XDG_CACHE_HOME");
}

TEST(Peaks, TheEngineReadsAGpusCachedPeak) {
  std::string dir = temp_dir("engine-cache");
  ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  MeasuredPeak cached;
  cached.device = "NVIDIA H100 80GB HBM3";
  cached.dtype = Dtype::kBf16;
  cached.tflops = 777.0;
  ASSERT_TRUE(store_cached_peak(peak_cache_path(), cached, nullptr));
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_PEAK_TFLOPS", "auto"}});
  t.engine->declare_model("transformer", small_model());
  Json r = run(t, {-1});
  EXPECT_EQ(r["dit"]["peak_tflops"], 777.0);
  EXPECT_EQ(r["dit"]["peak_source"], "measured");
  ::unsetenv("XDG_CACHE_HOME");
}

TEST(Peaks, RecordsSayWhenThePeakIsNotTheTables) {
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_PEAK_TFLOPS", "100"}});
  t.engine->declare_model("transformer", small_model());
  Json r = run(t, {-1});
  EXPECT_EQ(r["dit"]["peak_tflops"], 100.0);
  EXPECT_EQ(r["dit"]["peak_source"], "env");
  TestEngine table;  // the simulated H100: the table's peak, and nothing said
  table.engine->declare_model("transformer", small_model());
  EXPECT_FALSE(run(table, {-1})["dit"].contains("peak_source"));
}

TEST(AttentionDensity, DeclaredOrFromTheVariable) {
  ModelInfo causal = small_model();
  causal.attn_density = 0.5;
  TestEngine t;
  t.engine->declare_model("transformer", causal);
  Json r = run(t, {-1});
  EXPECT_DOUBLE_EQ(r["dit"]["flops_per_fwd"].get<double>(), full_forward(small_model(), 0.5) * 2);
  EXPECT_EQ(r["dit"]["attn_density"], 0.5);

  TestEngine v({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_ATTN_DENSITY", "0.25"}});
  v.engine->declare_model("transformer", causal);  // the variable wins
  Json q = run(v, {-1});
  EXPECT_DOUBLE_EQ(q["dit"]["flops_per_fwd"].get<double>(), full_forward(small_model(), 0.25) * 2);
  EXPECT_EQ(q["dit"]["attn_density"], 0.25);
}

TEST(Training, PartialForwardsPriceTheirFraction) {
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}});
  Trainer& trainer = t.engine->trainer();
  ModelInfo model = small_model();
  trainer.register_model(model);
  int opt = 0;
  for (int step = 0; step < 2; ++step) {
    MicroStep micro(&trainer);
    {
      ModelCall fwd(Phase::kForward, kTokens, 2, &trainer);
      if (step == 1) fwd.set_fraction(0.0);  // a forward whose blocks were all cached
      t.clock->advance(0.5);
    }
    OptimizerStep s(&opt, true, &trainer);
    t.clock->advance(0.5);
  }
  trainer.finish();
  Json r = Json::parse(t.output->records().back());
  const Json& tp = r["throughput"];
  EXPECT_EQ(tp["skipped_fwd"], 1);
  EXPECT_EQ(tp["effective_fwd"], 1.0);
  EXPECT_DOUBLE_EQ(tp["samples_per_s"].get<double>(), 4.0 / 2.0);  // both steps' samples
  double flops = 3.0 * full_forward(model) * 2;                    // only the first step's forward
  EXPECT_DOUBLE_EQ(tp["flops_per_step"].get<double>(), flops / 2);
}

// ---- what the blocks ran, and each call at its own length ---------------------------------------

TEST(ForwardWork, ReplacesTheCallsCountButNotWhatTheCallerSaid) {
  TestEngine t;
  t.engine->declare_model("transformer", small_model());
  {
    RequestScope request(*t.engine);
    {
      // Opened with a guess (2 rows of 4 * kTokens); its blocks ran kTokens on 1 of 2 rows.
      StageScope s(kTransformer, 4 * kTokens, 2);
      note_forward_work(kTransformer, ForwardWork{kTokens, 2, 0.5});
      t.clock->advance(0.1);
    }
    {
      // No block ran (a cached residual), and nothing else was read.
      StageScope s(kTransformer);
      note_forward_work(kTransformer, ForwardWork{0, 2, 0.0});
      t.clock->advance(0.1);
    }
    {
      // The caller's own word wins over what was seen.
      StageScope s(kTransformer);
      s.set_fraction(1.0);
      note_forward_work(kTransformer, ForwardWork{kTokens, 2, 0.25});
      t.clock->advance(0.1);
    }
  }
  Json r = Json::parse(t.output->records().back());
  const Json& dit = r["dit"];
  EXPECT_EQ(dit["tokens"], kTokens);  // the blocks', not the guess
  EXPECT_EQ(dit["batch"], 2);
  EXPECT_EQ(dit["effective_fwd"], 1.5);
  EXPECT_EQ(dit["skipped_fwd"], 1);
  double seconds = r["stages"]["transformer"]["total_ms"].get<double>() / 1000.0;
  EXPECT_DOUBLE_EQ(dit["tflops"].get<double>(),
                   full_forward(small_model()) * 2 * 1.5 / seconds / 1e12);
}

TEST(ForwardWork, MicroStepsOfDifferentLengthsArePricedEachAtItsOwn) {
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "1"}});
  Trainer& trainer = t.engine->trainer();
  ModelInfo model = small_model();
  trainer.register_model(model);
  int opt = 0;
  // One step of two micro-steps: 2 samples of kTokens, then 1 sample of 2 * kTokens whose forward
  // said its length through what its blocks ran (the call opened with a guess of 3 * kTokens).
  for (int micro = 0; micro < 2; ++micro) {
    MicroStep m(&trainer);
    {
      ModelCall fwd(Phase::kForward, micro == 0 ? kTokens : 3 * kTokens, micro == 0 ? 2 : 1,
                    &trainer);
      if (micro == 1) note_forward_work(kTransformer, ForwardWork{2 * kTokens, 1, -1});
      t.clock->advance(0.5);
    }
    OptimizerStep s(&opt, micro == 1, &trainer);
    t.clock->advance(0.5);
  }
  trainer.finish();
  Json r = Json::parse(t.output->records().back());
  const Json& tp = r["throughput"];
  auto per_sample = [&](double tokens) {
    return forward_flops(double(model.params), model.attention, tokens, double(model.text_tokens));
  };
  double work = 3.0 * (per_sample(kTokens) * 2 + per_sample(2 * kTokens));
  EXPECT_DOUBLE_EQ(tp["flops_per_step"].get<double>(), work);
  EXPECT_DOUBLE_EQ(tp["tokens"].get<double>(), (2.0 * kTokens + 2.0 * kTokens) / 3.0);
  EXPECT_DOUBLE_EQ(tp["attn_share"].get<double>(),
                   (per_sample(kTokens) * 2 + per_sample(2 * kTokens) -
                    2.0 * double(model.params) * 4 * kTokens) /
                       (work / 3.0));
  EXPECT_FALSE(tp.contains("effective_fwd"));  // every forward was full
}

TEST(ForwardWork, ReplaysTheSameFromALiveTrace) {
  std::string path = temp_dir("work-trace") + "/trace.jsonl";
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_TRACE", path}, {"VIDEOX_PERF_EVERY", "1"}});
  ModelInfo model = small_model();
  t.engine->declare_model("transformer", model);
  {
    RequestScope request(*t.engine, RequestOptions{0, nullptr});
    for (std::int64_t tokens : {kTokens, 2 * kTokens, kTokens}) {
      StageScope s(kTransformer, 5 * kTokens, 2);
      // The long call ran half its work, a quarter of its attention products' (side blocks).
      const bool full = tokens == kTokens;
      note_forward_work(kTransformer, ForwardWork{tokens, 2, full ? 1.0 : 0.5, full ? -1 : 0.25});
      t.clock->advance(0.1);
    }
  }
  Trainer& trainer = t.engine->trainer();
  trainer.set_device(0);
  trainer.register_model(model);
  int opt = 0;
  for (int micro = 0; micro < 2; ++micro) {
    MicroStep m(&trainer);
    {
      ModelCall fwd(Phase::kForward, kTokens, 1, &trainer);
      note_forward_work(kTransformer, micro == 0 ? ForwardWork{kTokens, 1, 1.0}
                                                 : ForwardWork{3 * kTokens, 1, 0.5, 0.2});
      t.clock->advance(0.5);
    }
    OptimizerStep s(&opt, micro == 1, &trainer);
    t.clock->advance(0.1);
  }
  t.engine->shutdown();
  ASSERT_EQ(t.output->records().size(), 2u);
  testing::expect_replay_reproduces(*t.output, path);
  Json request = Json::parse(t.output->records()[0]);
  EXPECT_EQ(request["dit"]["effective_fwd"], 2.5);
  auto attention = [&](double tokens) {
    return attention_flops(model.attention, tokens, double(model.text_tokens));
  };
  auto forward = [&](double tokens) {
    return forward_flops(double(model.params), model.attention, tokens, double(model.text_tokens));
  };
  const double work = 2 * (2 * forward(kTokens) + 0.5 * forward(2 * kTokens));
  EXPECT_DOUBLE_EQ(request["dit"]["attn_share"].get<double>(),
                   2 * (2 * attention(kTokens) + 0.25 * attention(2 * kTokens)) / work);
  Json window = Json::parse(t.output->records()[1]);
  EXPECT_DOUBLE_EQ(window["throughput"]["tokens"].get<double>(), 2.0 * kTokens);
  const double step = forward(kTokens) + 0.5 * forward(3 * kTokens);
  EXPECT_DOUBLE_EQ(window["throughput"]["attn_share"].get<double>(),
                   (attention(kTokens) + 0.2 * attention(3 * kTokens)) / step);
}

// ---- the cache ------------------------------------------------------------------------------

TEST(PeakCache, PathFollowsXdgThenHome) {
  auto env = [](std::map<std::string, std::string> vars) { return testing::env_of(vars); };
  EXPECT_EQ(peak_cache_path(env({{"XDG_CACHE_HOME", "/x/cache"}, {"HOME", "/home/u"}})),
            "/x/cache/vxperf/peaks.json");
  EXPECT_EQ(peak_cache_path(env({{"XDG_CACHE_HOME", "relative"}, {"HOME", "/home/u"}})),
            "/home/u/.cache/vxperf/peaks.json");
  EXPECT_EQ(peak_cache_path(env({{"HOME", "/home/u"}})), "/home/u/.cache/vxperf/peaks.json");
  EXPECT_EQ(peak_cache_path(env({})), "");
}

TEST(PeakCache, StoresReplacesAndKeepsOthers) {
  std::string path = temp_dir("store") + "/sub/peaks.json";
  MeasuredPeak a;
  a.device = "cpu: Test CPU (2 threads)";
  a.dtype = Dtype::kFp32;
  a.tflops = 0.1;
  a.n = 1024;
  a.gemms = 6;
  a.by = "test";
  MeasuredPeak b = a;
  b.dtype = Dtype::kBf16;
  b.tflops = 0.05;
  ASSERT_TRUE(store_cached_peak(path, a, nullptr));  // the folder is made
  ASSERT_TRUE(store_cached_peak(path, b, nullptr));
  a.tflops = 0.2;
  ASSERT_TRUE(store_cached_peak(path, a, nullptr));  // replaces its own entry
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& w) { warnings.push_back(w); };
  auto got = load_cached_peak(path, a.device, Dtype::kFp32, warn);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->tflops, 0.2);
  EXPECT_EQ(got->n, 1024);
  EXPECT_EQ(got->by, "test");
  EXPECT_EQ(load_cached_peak(path, b.device, Dtype::kBf16, warn)->tflops, 0.05);
  EXPECT_FALSE(load_cached_peak(path, b.device, Dtype::kFp8, warn));
  EXPECT_FALSE(load_cached_peak(path, "cpu: Other", Dtype::kFp32, warn));
  EXPECT_TRUE(warnings.empty());
  std::ifstream in(path);
  Json file = Json::parse(in);
  EXPECT_EQ(file["format"], "vxperf-peaks");
  EXPECT_EQ(file["version"], 1);
  EXPECT_EQ(file["peaks"].size(), 2u);
}

TEST(PeakCache, CorruptOrForeignFilesAreIgnoredWithAWarning) {
  std::string dir = temp_dir("corrupt");
  std::string path = dir + "/peaks.json";
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& w) { warnings.push_back(w); };
  const std::pair<const char*, const char*> cases[] = {
      {"{\"format\": \"vxperf-pea", "is not JSON"},
      {"{\"peaks\": []}", "is not a vxperf peak cache"},
      {"[1, 2, 3]", "is not a vxperf peak cache"},
      {"{\"format\": \"vxperf-peaks\", \"version\": 99, \"peaks\": []}", "version"},
  };
  for (const auto& [text, why] : cases) {
    std::ofstream(path) << text;
    warnings.clear();
    EXPECT_FALSE(load_cached_peak(path, "cpu", Dtype::kFp32, warn));
    ASSERT_EQ(warnings.size(), 1u) << text;
    EXPECT_NE(warnings[0].find(why), std::string::npos) << warnings[0];
    EXPECT_EQ(warnings[0].rfind("vxperf: the peak cache " + path, 0), 0u) << warnings[0];
  }
  // An entry for this device with an unusable rate: skipped, said.
  std::ofstream(path) << R"({"format": "vxperf-peaks", "version": 1, "peaks": [
      {"device": "cpu", "dtype": "fp32", "tflops": -1},
      {"device": "gpu", "dtype": "fp32", "tflops": "fast"}]})";
  warnings.clear();
  EXPECT_FALSE(load_cached_peak(path, "cpu", Dtype::kFp32, warn));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("unusable entry for cpu"), std::string::npos);

  // The next measurement replaces the corrupt file.
  std::ofstream(path) << "not json";
  MeasuredPeak p;
  p.device = "cpu";
  p.dtype = Dtype::kFp32;
  p.tflops = 1.5;
  ASSERT_TRUE(store_cached_peak(path, p, nullptr));
  warnings.clear();
  EXPECT_EQ(load_cached_peak(path, "cpu", Dtype::kFp32, warn)->tflops, 1.5);
  EXPECT_TRUE(warnings.empty());
}

TEST(PeakCache, CalibrateMeasuresOnceThenReadsTheCache) {
  std::string path = temp_dir("calibrate") + "/peaks.json";
  int probes = 0;
  PeakProbe probe = [&]() -> std::optional<MeasuredPeak> {
    ++probes;
    MeasuredPeak p;
    p.tflops = 0.25 * probes;
    p.n = 512;
    p.gemms = 3;
    p.by = "test";
    return p;
  };
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& w) { warnings.push_back(w); };
  auto first = calibrate_peak("cpu: Test (1 thread)", Dtype::kFp32, probe, false, warn, path);
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->from_cache);
  EXPECT_EQ(first->peak.tflops, 0.25);
  EXPECT_EQ(first->peak.device, "cpu: Test (1 thread)");
  EXPECT_GT(first->peak.ts, 0);
  auto second = calibrate_peak("cpu: Test (1 thread)", Dtype::kFp32, probe, false, warn, path);
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(second->peak.tflops, 0.25);
  EXPECT_EQ(probes, 1);  // read, not measured again
  // Another dtype is another measurement; force measures again.
  EXPECT_FALSE(
      calibrate_peak("cpu: Test (1 thread)", Dtype::kBf16, probe, false, warn, path)->from_cache);
  auto forced = calibrate_peak("cpu: Test (1 thread)", Dtype::kFp32, probe, true, warn, path);
  EXPECT_FALSE(forced->from_cache);
  EXPECT_EQ(probes, 3);
  EXPECT_TRUE(warnings.empty());
  // A probe that cannot measure gives nothing, and nothing is cached.
  PeakProbe none = []() -> std::optional<MeasuredPeak> { return std::nullopt; };
  EXPECT_FALSE(calibrate_peak("gpu", Dtype::kFp32, none, false, warn, path));
  PeakProbe nan = []() -> std::optional<MeasuredPeak> {
    MeasuredPeak p;
    p.tflops = std::nan("");
    return p;
  };
  EXPECT_FALSE(calibrate_peak("gpu", Dtype::kFp32, nan, false, warn, path));
  EXPECT_FALSE(load_cached_peak(path, "gpu", Dtype::kFp32, warn));
}

TEST(PeakCache, CpuKeyNamesTheThreads) {
  std::string key = cpu_device_key(2);
  EXPECT_EQ(key.rfind("cpu: ", 0), 0u);
  EXPECT_NE(key.find("(2 threads)"), std::string::npos);
  EXPECT_NE(cpu_device_key(1).find("(1 thread)"), std::string::npos);
}

// ---- the live trace ---------------------------------------------------------------------------

TEST(LiveTrace, FractionsPeaksDtypeAndDensityReplayTheSame) {
  std::string path = temp_dir("trace") + "/trace.jsonl";
  TestEngine t({{"VIDEOX_PERF", "1"},
                {"VIDEOX_PERF_PEAK_TFLOPS", "auto"},
                {"VIDEOX_PERF_TRACE", path},
                {"VIDEOX_PERF_EVERY", "2"}});
  ModelInfo model = small_model();
  model.dtype = Dtype::kFp16;
  model.attn_density = 0.5;
  t.engine->declare_model("transformer", model);
  MeasuredPeak peak;
  peak.dtype = Dtype::kFp16;
  peak.tflops = 321.0;
  t.engine->set_measured_peak(0, peak);
  run(t, {-1, 0.0, 0.5});
  Trainer& trainer = t.engine->trainer();
  trainer.set_device(0);
  trainer.register_model(model);
  int opt = 0;
  for (int step = 0; step < 2; ++step) {
    MicroStep micro(&trainer);
    {
      ModelCall fwd(Phase::kForward, kTokens, 1, &trainer);
      fwd.set_fraction(step == 0 ? 0.5 : 1.0);
      t.clock->advance(0.5);
    }
    OptimizerStep s(&opt, true, &trainer);
    t.clock->advance(0.1);
  }
  t.engine->shutdown();

  auto a = t.output->records();
  ASSERT_EQ(a.size(), 2u);
  testing::expect_replay_reproduces(*t.output, path);
  Json request = Json::parse(a[0]);
  EXPECT_EQ(request["dit"]["peak_source"], "measured");
  EXPECT_EQ(request["dit"]["peak_tflops"], 321.0);
  EXPECT_EQ(request["dit"]["dtype"], "fp16");
  EXPECT_EQ(request["dit"]["skipped_fwd"], 1);
  Json window = Json::parse(a[1]);
  EXPECT_EQ(window["throughput"]["effective_fwd"], 1.5);
  EXPECT_EQ(window["throughput"]["peak_tflops"], 321.0);
  EXPECT_EQ(window["throughput"]["attn_density"], 0.5);
}

}  // namespace
}  // namespace vxperf
