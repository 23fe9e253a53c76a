#include "vxperf/settings.h"

#include <gtest/gtest.h>

#include "base/env_parse.h"
#include "base/topology_env.h"
#include "test_support.h"
#include "vxperf/engine.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using internal::parse_float;
using internal::parse_int;
using internal::topology_from_env;
using testing::env_of;

TEST(ParseNumbers, FollowPythonRules) {
  EXPECT_EQ(parse_int(" 42 "), 42);
  EXPECT_EQ(parse_int("+7"), 7);
  EXPECT_EQ(parse_int("-3"), -3);
  EXPECT_EQ(parse_int("1_000"), 1000);
  EXPECT_FALSE(parse_int("1__0"));
  EXPECT_FALSE(parse_int("_1"));
  EXPECT_FALSE(parse_int("two"));
  EXPECT_FALSE(parse_int("5.0"));
  EXPECT_FALSE(parse_int(""));
  EXPECT_FALSE(parse_int("99999999999999999999999"));
  EXPECT_EQ(parse_float(" 989.5 "), 989.5);
  EXPECT_EQ(parse_float("1e3"), 1000.0);
  EXPECT_EQ(parse_float("2"), 2.0);
  EXPECT_FALSE(parse_float("fast"));
  EXPECT_FALSE(parse_float("0x10"));
  EXPECT_TRUE(parse_float("inf"));
}

TEST(Settings, DisabledUnlessSet) {
  EXPECT_FALSE(Settings::parse(env_of({}), nullptr).enabled());
  EXPECT_FALSE(Settings::parse(env_of({{"VIDEOX_PERF", "0"}}), nullptr).enabled());
  EXPECT_EQ(Settings::parse(env_of({{"VIDEOX_PERF", "2"}}), nullptr).level, 2);
}

TEST(Settings, DefaultsMatchTheReference) {
  Settings s = Settings::parse(env_of({{"VIDEOX_PERF", "1"}}), nullptr);
  EXPECT_EQ(s.warmup, 0);
  EXPECT_FALSE(s.log_all_ranks);
  EXPECT_FALSE(s.peak_tflops);
  EXPECT_EQ(s.dit_params, 0);
  EXPECT_TRUE(s.attn_flops);
  EXPECT_EQ(s.every, 50);
  EXPECT_EQ(s.total_steps, 0);
  EXPECT_FALSE(s.flops_coef);
  EXPECT_TRUE(s.json_path.empty());
}

TEST(Settings, EveryVariable) {
  Settings s = Settings::parse(env_of({{"VIDEOX_PERF", "2"},
                                       {"VIDEOX_PERF_JSON", "/tmp/x.jsonl"},
                                       {"VIDEOX_PERF_WARMUP", "3"},
                                       {"VIDEOX_PERF_RANKS", " ALL "},
                                       {"VIDEOX_PERF_PEAK_TFLOPS", "400"},
                                       {"VIDEOX_PERF_DIT_PARAMS", "1300000000"},
                                       {"VIDEOX_PERF_FLOPS_ATTN", "0"},
                                       {"VIDEOX_PERF_EVERY", "10"},
                                       {"VIDEOX_PERF_TOTAL_STEPS", "1000"},
                                       {"VIDEOX_PERF_FLOPS_COEF", "2.5"},
                                       {"VIDEOX_PERF_TRACE", "/tmp/t.jsonl"},
                                       {"VIDEOX_PERF_SP", "4"}}),
                               nullptr);
  EXPECT_EQ(s.level, 2);
  EXPECT_EQ(s.json_path, "/tmp/x.jsonl");
  EXPECT_EQ(s.warmup, 3);
  EXPECT_TRUE(s.log_all_ranks);
  EXPECT_EQ(s.peak_tflops, 400.0);
  EXPECT_EQ(s.dit_params, 1300000000);
  EXPECT_FALSE(s.attn_flops);
  EXPECT_EQ(s.every, 10);
  EXPECT_EQ(s.total_steps, 1000);
  EXPECT_EQ(s.flops_coef, 2.5);
  EXPECT_EQ(s.trace_path, "/tmp/t.jsonl");
  EXPECT_EQ(s.sp, 4);
}

TEST(Settings, BadValuesAreReportedOnceAndDefaulted) {
  std::vector<std::string> problems;
  Settings s = Settings::parse(env_of({{"VIDEOX_PERF", "1"},
                                       {"VIDEOX_PERF_WARMUP", "two"},
                                       {"VIDEOX_PERF_EVERY", "-3"},
                                       {"VIDEOX_PERF_PEAK_TFLOPS", "fast"},
                                       {"VIDEOX_PERF_TOTAL_STEPS", " "},
                                       {"VIDEOX_PERF_FLOPS_COEF", "-1"},
                                       {"VIDEOX_PERF_RANKS", "some"}}),
                               &problems);
  EXPECT_EQ(s.warmup, 0);
  EXPECT_EQ(s.every, 1);  // clamped, as the reference does
  EXPECT_FALSE(s.peak_tflops);
  EXPECT_EQ(s.total_steps, 0);  // blank counts as unset, silently
  EXPECT_FALSE(s.flops_coef);
  EXPECT_FALSE(s.log_all_ranks);
  ASSERT_EQ(problems.size(), 5u);
  for (const auto& p : problems) {
    EXPECT_EQ(p.rfind("vxperf: VIDEOX_PERF_", 0), 0u) << p;
    EXPECT_EQ(p.find("[Perf][rank"), std::string::npos);
  }
  EXPECT_EQ(problems[0], "vxperf: VIDEOX_PERF_WARMUP=\"two\" is not an integer; using 0");
}

TEST(Settings, TrackersFromTheEnvironmentOverTheProgram) {
  std::vector<std::string> problems;
  EXPECT_FALSE(Settings::parse(env_of({{"VIDEOX_PERF", "1"}}), &problems).trackers);
  Settings program;
  program.trackers = true;
  EXPECT_EQ(Settings::parse(env_of({{"VIDEOX_PERF", "1"}}), &problems, program).trackers, true);
  EXPECT_EQ(Settings::parse(env_of({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_TRACKERS", "0"}}),
                            &problems, program)
                .trackers,
            false);
  EXPECT_TRUE(problems.empty());
  Settings bad = Settings::parse(env_of({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_TRACKERS", "yes"}}),
                                 &problems, program);
  EXPECT_EQ(bad.trackers, true);  // the program's word stays
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "vxperf: VIDEOX_PERF_TRACKERS=\"yes\" is not 0 or 1; using the program's choice");
}

// ---- GPU observability (#20): VIDEOX_PERF_NVML, VIDEOX_PERF_NVTX --------------------------------
TEST(Settings, NvmlOnAndNvtxOffByDefaultBadValuesReported) {
  Settings d = Settings::parse(env_of({{"VIDEOX_PERF", "1"}}), nullptr);
  EXPECT_TRUE(d.nvml);
  EXPECT_FALSE(d.nvtx);
  Settings s = Settings::parse(
      env_of({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_NVML", "0"}, {"VIDEOX_PERF_NVTX", " 1 "}}),
      nullptr);
  EXPECT_FALSE(s.nvml);
  EXPECT_TRUE(s.nvtx);
  std::vector<std::string> problems;
  Settings bad = Settings::parse(
      env_of({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_NVML", "off"}, {"VIDEOX_PERF_NVTX", "yes"}}),
      &problems);
  EXPECT_TRUE(bad.nvml);
  EXPECT_FALSE(bad.nvtx);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].rfind("vxperf: VIDEOX_PERF_NVML=\"off\"", 0), 0u) << problems[0];
  EXPECT_NE(problems[0].find("using 1"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("using 0"), std::string::npos) << problems[1];
}

TEST(Settings, PowercapOnByDefaultAndAProfileRangeParsed) {
  Settings d = Settings::parse(env_of({{"VIDEOX_PERF", "1"}}), nullptr);
  EXPECT_TRUE(d.powercap);
  EXPECT_EQ(d.profile.kind, Settings::CaptureRange::Kind::kNone);
  Settings s = Settings::parse(env_of({{"VIDEOX_PERF", "1"},
                                       {"VIDEOX_PERF_POWERCAP", "0"},
                                       {"VIDEOX_PERF_PROFILE", " Steps:3-5 "}}),
                               nullptr);
  EXPECT_FALSE(s.powercap);
  EXPECT_EQ(s.profile.kind, Settings::CaptureRange::Kind::kSteps);
  EXPECT_EQ(s.profile.first, 3);
  EXPECT_EQ(s.profile.last, 5);
  Settings one = Settings::parse(
      env_of({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_PROFILE", "requests:7"}}), nullptr);
  EXPECT_EQ(one.profile.kind, Settings::CaptureRange::Kind::kRequests);
  EXPECT_EQ(one.profile.first, 7);
  EXPECT_EQ(one.profile.last, 7);
  // Not ranges: each said once, no range used.
  for (const char* bad : {"steps", "steps:5-3", "steps:-1", "epochs:1-2", "steps:a-b", "steps:3-",
                          "requests:1-2-3"}) {
    std::vector<std::string> problems;
    Settings r =
        Settings::parse(env_of({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_PROFILE", bad}}), &problems);
    EXPECT_EQ(r.profile.kind, Settings::CaptureRange::Kind::kNone) << bad;
    ASSERT_EQ(problems.size(), 1u) << bad;
    EXPECT_NE(problems[0].find("steps:A-B or requests:A-B"), std::string::npos) << problems[0];
    EXPECT_NE(problems[0].find("using no capture range"), std::string::npos) << problems[0];
  }
  std::vector<std::string> problems;
  Settings p =
      Settings::parse(env_of({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_POWERCAP", "no"}}), &problems);
  EXPECT_TRUE(p.powercap);
  ASSERT_EQ(problems.size(), 1u);
  // Neither goes into a trace's config: a replay reads its readings and starts no profiler.
  for (const auto& [name, value] : s.to_env()) {
    EXPECT_NE(name, "VIDEOX_PERF_PROFILE");
    EXPECT_NE(name, "VIDEOX_PERF_POWERCAP");
  }
}

TEST(Settings, PeakDtypeAndDensity) {
  Settings defaults = Settings::parse(env_of({{"VIDEOX_PERF", "1"}}), nullptr);
  EXPECT_FALSE(defaults.measure_peak);
  EXPECT_FALSE(defaults.dtype);  // bf16 unless a model says otherwise
  EXPECT_FALSE(defaults.attn_density);

  Settings s = Settings::parse(env_of({{"VIDEOX_PERF", "1"},
                                       {"VIDEOX_PERF_PEAK_TFLOPS", " AUTO "},
                                       {"VIDEOX_PERF_DTYPE", "fp8"},
                                       {"VIDEOX_PERF_ATTN_DENSITY", "0.5"}}),
                               nullptr);
  EXPECT_TRUE(s.measure_peak);
  EXPECT_FALSE(s.peak_tflops);
  EXPECT_EQ(s.dtype, Dtype::kFp8);
  EXPECT_EQ(s.attn_density, 0.5);

  // A number replaces a program's "auto" default, and "auto" a program's number.
  Settings program;
  program.measure_peak = true;
  Settings number = Settings::parse(
      env_of({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_PEAK_TFLOPS", "300"}}), nullptr, program);
  EXPECT_FALSE(number.measure_peak);
  EXPECT_EQ(number.peak_tflops, 300.0);
  program = Settings{};
  program.peak_tflops = 300.0;
  Settings automatic = Settings::parse(
      env_of({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_PEAK_TFLOPS", "auto"}}), nullptr, program);
  EXPECT_TRUE(automatic.measure_peak);
  EXPECT_FALSE(automatic.peak_tflops);

  std::vector<std::string> problems;
  Settings bad = Settings::parse(env_of({{"VIDEOX_PERF", "1"},
                                         {"VIDEOX_PERF_DTYPE", "int4"},
                                         {"VIDEOX_PERF_ATTN_DENSITY", "1.5"},
                                         {"VIDEOX_PERF_PEAK_TFLOPS", "automatic"}}),
                                 &problems);
  EXPECT_FALSE(bad.dtype);
  EXPECT_FALSE(bad.attn_density);
  EXPECT_FALSE(bad.measure_peak);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0],
            "vxperf: VIDEOX_PERF_PEAK_TFLOPS=\"automatic\" is not a positive number; using the "
            "default");
  EXPECT_EQ(problems[1],
            "vxperf: VIDEOX_PERF_DTYPE=\"int4\" is not bf16, fp16, fp8, tf32 or fp32; using the "
            "default");
  EXPECT_EQ(problems[2],
            "vxperf: VIDEOX_PERF_ATTN_DENSITY=\"1.5\" is not a density in (0, 1]; using the "
            "default");

  std::map<std::string, std::string> env;
  for (const auto& [k, v] : s.to_env()) env[k] = v;
  EXPECT_EQ(env["VIDEOX_PERF_PEAK_TFLOPS"], "auto");
  Settings back = Settings::parse(env_of(env), nullptr);
  EXPECT_TRUE(back.measure_peak);
  EXPECT_EQ(back.dtype, Dtype::kFp8);
  EXPECT_EQ(back.attn_density, 0.5);
}

TEST(Settings, LevelsAndCountsOutOfRangeAreReported) {
  std::vector<std::string> problems;
  EXPECT_FALSE(Settings::parse(env_of({{"VIDEOX_PERF", "-1"}}), &problems).enabled());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "vxperf: VIDEOX_PERF=\"-1\" is not 0, 1 or 2; using 0");
  problems.clear();
  EXPECT_EQ(Settings::parse(env_of({{"VIDEOX_PERF", "5"}}), &problems).level, 2);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "vxperf: VIDEOX_PERF=\"5\" is not 0, 1 or 2; using 2");
  problems.clear();
  // A negative parameter count is refused on purpose (the reference would price with it): one of
  // the documented differences.
  Settings s = Settings::parse(
      env_of(
          {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_WARMUP", "-2"}, {"VIDEOX_PERF_DIT_PARAMS", "-5"}}),
      &problems);
  EXPECT_EQ(s.warmup, 0);
  EXPECT_EQ(s.dit_params, 0);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "vxperf: VIDEOX_PERF_WARMUP=\"-2\" is not a count; using 0");
  EXPECT_EQ(problems[1], "vxperf: VIDEOX_PERF_DIT_PARAMS=\"-5\" is not a parameter count; using 0");
}

// Python's integers have no limit: a value beyond 64 bits is as large as it gets, not a typo.
TEST(Settings, IntegersBeyond64BitsSaturate) {
  std::vector<std::string> problems;
  Settings s = Settings::parse(env_of({{"VIDEOX_PERF", "1"},
                                       {"VIDEOX_PERF_EVERY", "100000000000000000000"},
                                       {"VIDEOX_PERF_TOTAL_STEPS", "1_000_000_000_000_000_000_000"},
                                       {"VIDEOX_PERF_WARMUP", "99999999999999999999"}}),
                               &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(s.every, INT64_MAX);
  EXPECT_EQ(s.total_steps, INT64_MAX);
  EXPECT_EQ(s.warmup, INT64_MAX);
  // VIDEOX_PERF_EVERY=10**20: one window, at the end.
  testing::TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "100000000000000000000"}},
                        /*with_device=*/false);
  Trainer& trainer = t.engine->trainer();
  int optimizer = 0;
  for (int i = 0; i < 7; ++i) {
    MicroStep micro(&trainer);
    t.clock->advance(0.5);
    OptimizerStep o(&optimizer, true, &trainer);
  }
  EXPECT_TRUE(t.output->windows().empty());
  trainer.finish();
  ASSERT_EQ(t.output->windows().size(), 1u);
  EXPECT_EQ(t.output->windows()[0].steps, 7);
}

TEST(Settings, OffReadsNothingElse) {
  std::vector<std::string> problems;
  Settings::parse(env_of({{"VIDEOX_PERF", "0"}, {"VIDEOX_PERF_WARMUP", "two"}}), &problems);
  EXPECT_TRUE(problems.empty());
  Settings::parse(env_of({{"VIDEOX_PERF", "yes"}}), &problems);
  ASSERT_EQ(problems.size(), 1u);
}

TEST(Settings, RoundTripThroughEnv) {
  Settings s = Settings::parse(env_of({{"VIDEOX_PERF", "2"},
                                       {"VIDEOX_PERF_WARMUP", "3"},
                                       {"VIDEOX_PERF_PEAK_TFLOPS", "989.5"},
                                       {"VIDEOX_PERF_FLOPS_ATTN", "0"},
                                       {"VIDEOX_PERF_EVERY", "7"}}),
                               nullptr);
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : s.to_env()) env[k] = v;
  Settings back = Settings::parse(env_of(env), nullptr);
  EXPECT_EQ(back.level, 2);
  EXPECT_EQ(back.warmup, 3);
  EXPECT_EQ(back.peak_tflops, 989.5);
  EXPECT_FALSE(back.attn_flops);
  EXPECT_EQ(back.every, 7);
}

TEST(Topology, FromLauncherEnvironment) {
  std::vector<std::string> problems;
  auto t = topology_from_env(env_of({{"RANK", "3"}, {"WORLD_SIZE", "8"}}), &problems);
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.world_size, 8);
  t = topology_from_env(env_of({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
                        &problems);
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.world_size, 2);
  t = topology_from_env(env_of({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}}), &problems);
  EXPECT_EQ(t.rank, 5);
  EXPECT_TRUE(problems.empty());
  // A rank at or above the world size is taken as given, as the reference takes it, said once.
  t = topology_from_env(env_of({{"RANK", "9"}, {"WORLD_SIZE", "2"}}), &problems);
  EXPECT_EQ(t.rank, 9);
  EXPECT_EQ(t.world_size, 2);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "vxperf: RANK=9 is not below WORLD_SIZE=2; using it as given");
}

TEST(Topology, ValuesBeyondIntAreReported) {
  for (const char* rank : {"2147483648", "99999999999999999999999", "-1"}) {
    std::vector<std::string> problems;
    auto t = topology_from_env(env_of({{"RANK", rank}, {"WORLD_SIZE", "4"}}), &problems);
    EXPECT_EQ(t.rank, 0) << rank;
    EXPECT_EQ(t.world_size, 1) << rank;
    EXPECT_EQ(problems.size(), 1u) << rank;
  }
  std::vector<std::string> problems;
  auto t = topology_from_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "4294967297"}}), &problems);
  EXPECT_EQ(t.world_size, 1);
  EXPECT_EQ(problems.size(), 1u);
}

}  // namespace
}  // namespace vxperf
