// The event-script reader, and the promise of VIDEOX_PERF_TRACE: replaying a live run's trace
// reproduces the live run's records and log lines.
#include "vxperf/event_script.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "replay_check.h"
#include "test_support.h"
#include "training/trainer_core.h"
#include "vxperf/inference.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;
using testing::TestEngine;

std::string temp_path(const std::string& name) {
  std::string path = ::testing::TempDir() + "vxperf-trace-test/" + name;
  std::filesystem::remove(path);
  return path;
}

TEST(LiveTrace, InferenceReplayReproducesTheRecords) {
  std::string path = temp_path("inference.jsonl");
  TestEngine t({{"VIDEOX_PERF", "2"}, {"VIDEOX_PERF_WARMUP", "1"}, {"VIDEOX_PERF_TRACE", path}},
               true, Topology{0, 2, 2});
  ModelInfo model = testing::wan_1_3b();
  t.engine->declare_model("transformer", model);
  double device_ms = 0;
  t.device->set_auto_time([&] { return device_ms; });
  for (int r = 0; r < 3; ++r) {
    t.device->set_readings(DeviceReadings{(r + 1ull) << 30, (r + 5ull) << 30});
    RequestScope request(*t.engine, RequestOptions{1, nullptr});
    {
      StageScope s(kTextEncoder);
      t.clock->advance(0.031 * (r + 1));
      device_ms += 12.5;
    }
    for (int i = 0; i < 4 + r; ++i) {
      StageScope s(kTransformer, 32760, 2);
      t.clock->advance(0.1 + 0.013 * i);
      device_ms += 170.25 + i;
    }
    {
      RequestScope nested(*t.engine);  // ignored: the outer request owns it
      StageScope s(kVaeDecode);
      t.clock->advance(0.7);
      device_ms += 650;
    }
  }
  t.engine->shutdown();
  testing::expect_replay_reproduces(*t.output, path + ".rank0");
}

// A served request: its queue wait, its time to the first denoising step (the first transformer
// call's end), its video's length and real-time factor; the trace carries them to the replay.
TEST(LiveTrace, ServingFieldsInTheRecordAndTheReplay) {
  std::string path = temp_path("serving.jsonl");
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_TRACE", path}, {"VIDEOX_PERF_FPS", "16"}});
  t.engine->declare_model("transformer", testing::wan_1_3b());
  RequestOptions served;
  served.queue_s = 2.5;
  served.frames = 81;
  served.fps = 24;
  RequestOptions by_setting;  // fps from VIDEOX_PERF_FPS
  by_setting.frames = 32;
  RequestOptions bad;  // a negative queue and frames without any fps: not said
  bad.queue_s = -1;
  bad.frames = 0;
  for (const RequestOptions& options : {served, by_setting, bad}) {
    RequestScope request(*t.engine, options);
    {
      StageScope s(kTextEncoder);
      t.clock->advance(0.25);
    }
    for (int i = 0; i < 3; ++i) {
      StageScope s(kTransformer, 32760, 1);
      t.clock->advance(0.5);
    }
  }
  t.engine->shutdown();
  const std::vector<RequestRecord> r = t.output->requests();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(*r[0].queue_s, 2.5);
  EXPECT_NEAR(*r[0].first_step_s, 0.75, 1e-9);  // text encoder 0.25 + one forward 0.5
  EXPECT_NEAR(*r[0].video_s, 81.0 / 24, 1e-12);
  EXPECT_NEAR(*r[0].realtime_factor, 1.75 / (81.0 / 24), 1e-9);
  EXPECT_FALSE(r[1].queue_s.has_value());
  EXPECT_NEAR(*r[1].video_s, 2.0, 1e-12);  // 32 frames at 16 fps
  EXPECT_FALSE(r[2].queue_s.has_value());
  EXPECT_FALSE(r[2].video_s.has_value());
  EXPECT_FALSE(r[2].realtime_factor.has_value());
  EXPECT_NEAR(*r[2].first_step_s, 0.75, 1e-9);
  const std::string line = to_json_line(r[0]);
  EXPECT_NE(line.find("\"queue_s\":2.5"), std::string::npos) << line;
  EXPECT_NE(line.find("\"realtime_factor\""), std::string::npos) << line;
  testing::expect_replay_reproduces(*t.output, path);
}

// #50: the sampler's steps, said as the request opens or once the loop knows them (the last said
// wins; below 1 or outside a request: nothing), in the record and, through the trace's
// request_begin, in the replay.
TEST(LiveTrace, DenoisingStepsInTheRecordAndTheReplay) {
  std::string path = temp_path("steps.jsonl");
  TestEngine t({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_TRACE", path}});
  t.engine->declare_model("transformer", testing::wan_1_3b());
  note_denoising_steps(9);  // no request open: nothing
  for (int r = 0; r < 3; ++r) {
    RequestOptions options;
    if (r < 2) options.denoising_steps = 5;
    RequestScope request(*t.engine, options);
    if (r == 1) {
      note_denoising_steps(0);  // not a count: the 5 stays until ...
      note_denoising_steps(2);  // ... a strength cut the schedule to 2 steps
    }
    for (int i = 0; i < 4; ++i) {
      StageScope s(kTransformer, 32760, 1);
      t.clock->advance(0.5);
    }
  }
  t.engine->shutdown();
  const std::vector<RequestRecord> r = t.output->requests();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].denoising_steps, 5);
  EXPECT_EQ(r[1].denoising_steps, 2);
  EXPECT_FALSE(r[2].denoising_steps);
  ASSERT_TRUE(denoising_step_time(r[1]));
  EXPECT_NEAR(denoising_step_time(r[1])->ms_per_step(), 1000.0, 1e-6);  // 4 calls of 0.5 s
  testing::expect_replay_reproduces(*t.output, path);
}

TEST(LiveTrace, TrainingReplayReproducesTheRecords) {
  std::string path = temp_path("training.jsonl");
  TestEngine t({{"VIDEOX_PERF", "2"},
                {"VIDEOX_PERF_EVERY", "3"},
                {"VIDEOX_PERF_WARMUP", "1"},
                {"VIDEOX_PERF_TRACE", path}});
  Trainer& trainer = t.engine->trainer();
  trainer.set_device(0);
  ModelInfo model = testing::wan_1_3b();
  model.trainable = 5000000;
  trainer.register_model(model);
  double device_ms = 0;
  int lag_choice = 0;
  const int lags[] = {0, 1, 2, 4, -1, 0, 1};
  t.device->set_auto_time([&] { return device_ms; });
  t.device->set_auto_ready([&]() -> testing::SimulatedBackend::ReadyTest {
    int lag = lags[lag_choice % 7];
    if (lag < 0) return [] { return false; };
    std::int64_t at = internal::core_of(trainer).current_step_index() + 1 + lag;
    return [&trainer, at] { return trainer.steps_closed() >= at; };
  });
  int opt = 0;
  int critic = 0;
  const std::int64_t buckets[] = {1560, 32760, 0, 8190};
  for (int step = 0; step < 11; ++step) {
    lag_choice = step;
    t.device->set_readings(DeviceReadings{(step + 1ull) << 28, (step + 2ull) << 28});
    for (int micro = 0; micro < 2; ++micro) {
      bool last = micro == 1;
      MicroStep m(&trainer);
      t.clock->advance(0.003);
      {
        ModelCall vae(Phase::kVaeEncode, 0, 1, &trainer);
        t.clock->advance(0.02);
        device_ms += 25;
      }
      {
        ModelCall fwd(Phase::kForward, buckets[step % 4], 1 + step % 3, &trainer);
        t.clock->advance(0.3);
        device_ms += 410.5;
      }
      {
        Backward b(&trainer);
        t.clock->advance(0.6);
        device_ms += 820.25;
      }
      if (last) {
        Clip c(&trainer);
        t.clock->advance(0.01);
        device_ms += 12;
      }
      {
        OptimizerStep o(&opt, last, &trainer);
        t.clock->advance(last ? 0.04 : 0.0001);
        device_ms += 30;
      }
      {
        OptimizerStep o(&critic, last, &trainer);
        t.clock->advance(0.01);
      }
      t.clock->advance(0.002);
    }
    t.clock->advance(0.05);  // the data loader
  }
  t.engine->shutdown();
  testing::expect_replay_reproduces(*t.output, path);
}

void expect_error(const std::string& script, int line, const std::string& fragment) {
  std::istringstream in(script);
  testing::MemoryOutput out;
  try {
    replay(in, out.log_fn(), out);
    FAIL() << "no error for: " << script;
  } catch (const ScriptError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// The training's final record from a script: at its train_end event where it has one (the
// trainer's finish, before the engine's), else at finish; its ledger runs to that moment.
TEST(EventScript, TheTrainingsEndIsItsTrainEndEventOrElseFinish) {
  const std::string steps =
      R"({"ev": "config", "env": {"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "2"}}
{"ev": "micro_enter", "t": 10.0}
{"ev": "phase", "name": "fwd", "t0": 10.0, "t1": 10.5, "device_ms": null}
{"ev": "micro_exit", "t": 10.5}
{"ev": "optimizer_step", "t0": 10.5, "t1": 11.0, "device_ms": null, "owner": "opt", "sync": true}
{"ev": "micro_enter", "t": 11.0}
{"ev": "phase", "name": "fwd", "t0": 11.0, "t1": 11.5, "device_ms": null}
{"ev": "micro_exit", "t": 11.5}
{"ev": "optimizer_step", "t0": 11.5, "t1": 12.0, "device_ms": null, "owner": "opt", "sync": true}
{"ev": "checkpoint_save", "t0": 12.5, "t1": 14.0, "device_ms": null}
)";
  auto end_of = [](const std::string& script) {
    std::istringstream in(script);
    testing::MemoryOutput out;
    replay(in, out.log_fn(), out);
    auto all = out.all_records();
    EXPECT_EQ(out.records().size(), 1u);  // the window of steps 0-1
    EXPECT_EQ(all.size(), 2u);
    return all.empty() ? Json() : Json::parse(all.back());
  };
  // Without train_end: the training ends at finish.
  Json at_finish = end_of(steps + R"({"ev": "finish", "t": 20.0})" + "\n");
  EXPECT_EQ(at_finish["kind"], "train_end");
  EXPECT_EQ(at_finish["steps"], 2);
  EXPECT_EQ(at_finish["step_last"], 1);
  EXPECT_DOUBLE_EQ(at_finish["after_last_step_s"].get<double>(), 8.0);
  const Json& l = at_finish["ledger"];
  EXPECT_DOUBLE_EQ(l["wall_s"].get<double>(), 10.0);  // from the first point at 10 to 20
  // The steps' parts as the window's ledger has them (the second step's data wait counted from
  // the first's micro-step exit: 0.5 s, its compute the ideal 0.5 s, the first's 1 s).
  EXPECT_DOUBLE_EQ(l["productive_s"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(l["first_step_excess_s"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(l["data_wait_s"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(l["save_s"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(l["between_steps_s"].get<double>(), 6.5);
  EXPECT_DOUBLE_EQ(l["goodput"].get<double>(), 0.1);
  // With it: there, whatever comes after.
  Json at_end = end_of(steps + R"({"ev": "train_end", "t": 15.0})" + "\n" +
                       R"({"ev": "finish", "t": 20.0})" + "\n");
  EXPECT_DOUBLE_EQ(at_end["after_last_step_s"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(at_end["ledger"]["wall_s"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(at_end["ledger"]["between_steps_s"].get<double>(), 1.5);
  // A script with no step has no final record.
  std::istringstream none(R"({"ev": "config", "env": {"VIDEOX_PERF": "1"}}
{"ev": "finish", "t": 1.0}
)");
  testing::MemoryOutput out;
  replay(none, out.log_fn(), out);
  EXPECT_TRUE(out.all_records().empty());
}

TEST(EventScript, ClearErrorsNamingTheLine) {
  const std::string config = R"({"ev": "config", "env": {"VIDEOX_PERF": "1"}})"
                             "\n";
  expect_error("", 0, "empty");
  expect_error(R"({"ev": "finish", "t": 1})", 1, "first event must be a config");
  expect_error(config + "not json\n", 2, "not a JSON object");
  expect_error(config + "\n" + R"({"ev": "bogus"})", 3, "unknown event \"bogus\"");
  expect_error(config + R"({"ev": "request_begin"})", 2, "\"t\" must be a number");
  expect_error(config + R"({"ev": "phase", "name": "opt", "t0": 1, "t1": 2})", 2,
               "is not one of fwd");
  expect_error(config + R"({"ev": "config"})", 2, "a second config");
}

TEST(EventScript, OffProducesNothing) {
  std::istringstream in(R"({"ev": "config", "env": {"VIDEOX_PERF": "0"}, "device": "NVIDIA H100"}
{"ev": "request_begin", "t": 1}
{"ev": "stage", "name": "transformer", "t0": 1, "t1": 2, "device_ms": 5}
{"ev": "request_end", "t": 3}
{"ev": "finish", "t": 4})");
  testing::MemoryOutput out;
  replay(in, out.log_fn(), out);
  EXPECT_TRUE(out.records().empty());
  EXPECT_TRUE(out.logs().empty());
}

// The reference never reports a call that did not return: a script that stops inside a request
// (a live run killed mid-request) records the requests before it, and nothing of that one.
TEST(EventScript, AScriptEndingInsideARequestRecordsNothingOfIt) {
  std::istringstream in(R"({"ev": "config", "env": {"VIDEOX_PERF": "1"}, "device": "NVIDIA H100"}
{"ev": "request_begin", "t": 1}
{"ev": "stage", "name": "transformer", "t0": 1, "t1": 2, "device_ms": 5}
{"ev": "request_end", "t": 3}
{"ev": "request_begin", "t": 4}
{"ev": "stage", "name": "transformer", "t0": 4, "t1": 5, "device_ms": 5}
)");
  testing::MemoryOutput out;
  replay(in, out.log_fn(), out);
  ASSERT_EQ(out.requests().size(), 1u);
  EXPECT_EQ(out.requests()[0].req, 0);
  int lines = 0;
  for (const auto& l : out.logs()) lines += l.rfind("[Perf]", 0) == 0;
  EXPECT_EQ(lines, 1);
}

// A live run on a rank at or above its world size (accepted, with a warning) replays as it ran.
TEST(EventScript, ARankAtOrAboveTheWorldSizeReplaysAsGiven) {
  std::istringstream in(
      R"({"ev": "config", "env": {"VIDEOX_PERF": "1"}, "rank": 9, "world_size": 2, "sp": 1}
{"ev": "request_begin", "t": 1}
{"ev": "stage", "name": "transformer", "t0": 1, "t1": 2}
{"ev": "request_end", "t": 3}
)");
  testing::MemoryOutput out;
  replay(in, out.log_fn(), out);
  ASSERT_EQ(out.requests().size(), 1u);
  EXPECT_EQ(out.requests()[0].rank, 9);
  EXPECT_EQ(out.requests()[0].world_size, 2);
}

TEST(EventScript, SettingsOverrides) {
  std::istringstream in(R"({"ev": "config", "env": {"VIDEOX_PERF": "0"}}
{"ev": "request_begin", "t": 1}
{"ev": "stage", "name": "transformer", "t0": 1, "t1": 2}
{"ev": "request_end", "t": 3})");
  testing::MemoryOutput out;
  ReplayOptions options;
  options.env_overrides = {{"VIDEOX_PERF", "1"}};
  replay(in, out.log_fn(), out, options);
  ASSERT_EQ(out.records().size(), 1u);
  EXPECT_EQ(Json::parse(out.records()[0])["stages"]["transformer"]["total_ms"], 1000.0);
}

}  // namespace
}  // namespace vxperf
