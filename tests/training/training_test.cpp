#include "vxperf/training.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "replay_check.h"
#include "test_support.h"
#include "training/trainer_core.h"
#include "vxperf/training_markers.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;
using testing::TestEngine;

// A trainer on virtual time whose device is 1.5x slower than the host sees, with device events
// that complete `lag` global steps after the step that recorded them (-1: never).
struct TrainRig {
  TestEngine t;
  Trainer* trainer;
  double device_clock_ms = 0;
  int opt = 0;

  TrainRig(int lag, std::map<std::string, std::string> env, Topology topology = {})
      : t(std::move(env), true, topology), trainer(&t.engine->trainer()) {
    trainer->set_device(0);
    ModelInfo model = testing::wan_1_3b();
    model.checkpointing = true;
    trainer->register_model(model);
    t.device->set_auto_time([this] { return device_clock_ms; });
    Trainer* tr = trainer;
    t.device->set_auto_ready([tr, lag]() -> testing::SimulatedBackend::ReadyTest {
      if (lag < 0) return [] { return false; };
      std::int64_t ready_at = internal::core_of(*tr).current_step_index() + 1 + lag;
      return [tr, ready_at] { return tr->steps_closed() >= ready_at; };
    });
  }

  // Host and device advance together; the device runs `device_factor` times longer.
  void work(double host_s, double device_factor = 1.5) {
    t.clock->advance(host_s);
    device_clock_ms += host_s * 1000.0 * device_factor;
  }

  void step(std::int64_t tokens = 32760) {
    MicroStep micro(trainer);
    work(0.01, 1.0);  // prep
    {
      ModelCall fwd(Phase::kForward, tokens, 1, trainer);
      work(0.4);
    }
    {
      Backward bwd(trainer);
      {
        ModelCall recompute(Phase::kForward, tokens, 1, trainer);  // folded into bwd
        work(0.2);
      }
      work(0.6);
    }
    {
      Clip clip(trainer);
      work(0.02);
    }
    {
      OptimizerStep o(&opt, true, trainer);
      work(0.05);
    }
  }

  // Three steps, then a checkpoint saved to `path` (0.5 s).
  void three_steps_then_save(const std::string& path) {
    for (int i = 0; i < 3; ++i) step();
    CheckpointSave save(trainer);
    save.set_path(path);
    work(0.5, 1.0);
  }

  // A checkpoint restored from `path` (0.2 s), then the two steps of one window.
  void restore_then_two_steps(const std::string& path) {
    {
      CheckpointRestore restore(trainer);
      restore.set_path(path);
      work(0.2, 1.0);
    }
    step();
    step();
  }

  std::vector<Json> records() {
    std::vector<Json> out;
    for (const auto& line : t.output->records()) out.push_back(Json::parse(line));
    return out;
  }
};

// A checkpoint restored before the first step, one saved between steps and an evaluation: each
// goes to the next window's "outside" object with its bytes and GB/s, and none is a step's time or
// part of its data wait.
TEST(Training, CheckpointsAndEvaluationsAreTakenOutOfTheirSteps) {
  TrainRig rig(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}});
  {
    CheckpointRestore restore(rig.trainer);
    restore.set_bytes(1000);
    rig.work(3.0, 1.0);
  }
  rig.step();
  {
    CheckpointSave save(rig.trainer);
    save.set_bytes(2000000000);
    rig.work(4.0, 1.0);
  }
  rig.work(0.1, 1.0);  // the data wait
  rig.step();
  {
    Evaluation eval(rig.trainer);
    rig.work(1.0, 1.0);
  }
  rig.step();
  rig.step();
  auto r = rig.records();
  ASSERT_EQ(r.size(), 2u);
  // Steps of 1.28 s of host work (the device's 1.5x on the model calls: 1.98 s), the second with
  // its 0.1 s of data wait: the save's 4 s is in neither.
  EXPECT_NEAR(r[0]["phases_s"]["data"].get<double>(), 0.05, 1e-9);  // a mean over the 2 steps
  EXPECT_NEAR(r[0]["step_s_p95"].get<double>(), 1.28 + 0.1, 0.01);
  const Json& first = r[0]["outside"];
  EXPECT_EQ(first["restores"], 1);
  EXPECT_NEAR(first["restore_s"].get<double>(), 3.0, 1e-9);
  EXPECT_EQ(first["restore_bytes"], 1000);
  EXPECT_EQ(first["saves"], 1);
  EXPECT_NEAR(first["save_s"].get<double>(), 4.0, 1e-9);
  EXPECT_NEAR(first["save_gb_per_s"].get<double>(), 0.5, 1e-9);
  EXPECT_EQ(first["evals"], 0);
  const Json& second = r[1]["outside"];
  EXPECT_EQ(second["evals"], 1);
  EXPECT_NEAR(second["eval_s"].get<double>(), 1.0, 1e-9);
  EXPECT_FALSE(second.contains("save_bytes"));
  EXPECT_NEAR(r[1]["step_s_p95"].get<double>(), 1.28, 0.01);
  // The ledger through step 3, from the restore's start: four steps of 1.28 s compute (the ideal:
  // nothing slow, nothing to compile), the 0.1 s data wait, the 3 + 4 + 1 s outside the steps.
  const Json& l = r[1]["ledger"];
  EXPECT_EQ(l["steps"], 4);
  EXPECT_NEAR(l["ideal_step_s"].get<double>(), 1.28, 1e-9);
  EXPECT_NEAR(l["productive_s"].get<double>(), 4 * 1.28, 1e-9);
  EXPECT_NEAR(l["first_step_excess_s"].get<double>(), 0.0, 1e-9);
  EXPECT_NEAR(l["slow_step_excess_s"].get<double>(), 0.0, 1e-9);
  EXPECT_NEAR(l["data_wait_s"].get<double>(), 0.1, 1e-9);
  EXPECT_NEAR(l["restore_s"].get<double>(), 3.0, 1e-9);
  EXPECT_NEAR(l["save_s"].get<double>(), 4.0, 1e-9);
  EXPECT_NEAR(l["eval_s"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(l["between_steps_s"].get<double>(), 0.0, 1e-9);
  EXPECT_NEAR(l["wall_s"].get<double>(), 3.0 + 4 * 1.28 + 0.1 + 4.0 + 1.0, 1e-9);
  EXPECT_NEAR(l["goodput"].get<double>(), 4 * 1.28 / 13.22, 1e-9);
  EXPECT_EQ(r[0]["ledger"]["steps"], 2);  // running: the loop so far
  // A window with none has no object; a phase that is no outside call is not timed as one.
  TrainRig plain(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "1"}});
  { OutsideCall wrong(Phase::kClip, plain.trainer); }
  plain.step();
  EXPECT_FALSE(plain.records()[0].contains("outside"));
}

// A validation pass between the steps, as diffusers' training scripts run one: the loop's own
// models called by a pipeline inside an evaluation (made, then called: one evaluation), then a
// save whose own writer saves inside it. The models' calls there are the evaluation's time, not a
// step's phases, samples or FLOPs; the inner save is part of the outer one.
TEST(Training, ModelCallsOutsideTheStepsAreNotTheSteps) {
  TrainRig rig(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}});
  rig.step();
  {
    Evaluation made(rig.trainer);  // the pipeline made
    rig.work(0.5, 1.0);
  }
  {
    Evaluation called(rig.trainer);
    ModelCall text(Phase::kTextEncoder, 0, 1, rig.trainer);
    ModelCall dit(Phase::kForward, 32760, 4, rig.trainer);
    rig.work(1.0);
  }
  {
    CheckpointSave save(rig.trainer);
    save.set_bytes(1000);
    {
      CheckpointSave inner(rig.trainer);
      inner.set_bytes(10);
      rig.work(0.2, 1.0);
    }
    rig.work(0.1, 1.0);
  }
  rig.step();
  auto r = rig.records();
  ASSERT_EQ(r.size(), 1u);
  // Two steps of 1.28 s and one sample each, as the step alone priced them.
  EXPECT_NEAR(r[0]["step_s_p95"].get<double>(), 1.28, 0.01);
  EXPECT_EQ(r[0]["throughput"]["samples"].get<double>(), 1.0);
  EXPECT_FALSE(r[0]["phases_s"].contains("text_encoder"));
  const Json& outside = r[0]["outside"];
  EXPECT_EQ(outside["evals"], 1);
  EXPECT_NEAR(outside["eval_s"].get<double>(), 1.5, 1e-9);
  EXPECT_EQ(outside["saves"], 1);
  EXPECT_NEAR(outside["save_s"].get<double>(), 0.3, 1e-9);
  EXPECT_EQ(outside["save_bytes"], 1000);
  EXPECT_NEAR(r[0]["ledger"]["between_steps_s"].get<double>(), 0.0, 1e-9);
  EXPECT_NEAR(r[0]["ledger"]["data_wait_s"].get<double>(), 0.0, 1e-9);
  // Inside a micro-step an evaluation's model calls are the step's (a loop run inside the scope).
  TrainRig inside(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "1"}});
  {
    Evaluation eval(inside.trainer);
    inside.step();
  }
  ASSERT_EQ(inside.records().size(), 1u);
  EXPECT_EQ(inside.records()[0]["throughput"]["samples"].get<double>(), 1.0);
}

// An EMA update after the optimizer's step, between two micro-steps (as diffusers' scripts call
// EMAModel.step once the step synced), is the next step's `ema` phase, not its data wait.
TEST(Training, ACallBetweenTheStepsIsItsPhaseNotTheDataWait) {
  TrainRig rig(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}});
  for (int i = 0; i < 4; ++i) {
    rig.step();
    {
      PhaseCall ema(Phase::kEma, rig.trainer);
      rig.work(0.3, 1.0);
    }
    rig.work(0.1, 1.0);  // the data loader
  }
  auto r = rig.records();
  ASSERT_EQ(r.size(), 2u);
  // The second window's steps each follow one update and one wait: 0.3 s and 0.1 s.
  EXPECT_NEAR(r[1]["phases_s"]["ema"].get<double>(), 0.3, 1e-9);
  EXPECT_NEAR(r[1]["phases_s"]["data"].get<double>(), 0.1, 1e-9);
  // The loop's ledger so far: the waits before steps 2 to 4.
  EXPECT_NEAR(r[1]["ledger"]["data_wait_s"].get<double>(), 0.3, 1e-9);
  EXPECT_NEAR(r[1]["step_s_p95"].get<double>(), 1.68, 1e-9);
}

// A checkpoint saved with a path keeps its step beside the records file; a later process (a
// restarted attempt) that restores the path before its first step numbers its steps on from
// there, or from the step the program says. A scope outside the steps never closed is said.
TEST(Training, ARestoredCheckpointResumesTheStepsItWasSavedAt) {
  const std::string records = ::testing::TempDir() + "vxperf-resume/r.jsonl";
  std::filesystem::remove_all(::testing::TempDir() + "vxperf-resume");
  const std::map<std::string, std::string> env = {
      {"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}, {"VIDEOX_PERF_JSON", records}};
  {
    TrainRig first(0, env);
    first.three_steps_then_save("/checkpoints/step-3");
  }
  TrainRig again(0, env);
  again.restore_then_two_steps("/checkpoints/step-3");
  ASSERT_EQ(again.records().size(), 1u);
  EXPECT_EQ(again.records()[0]["step_first"], 3);
  EXPECT_EQ(again.records()[0]["step_last"], 4);

  TrainRig told(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}});
  {
    CheckpointRestore restore(told.trainer);
    restore.set_step(10);
  }
  TrainMark open = begin_outside(Phase::kSave, told.trainer);  // never closed
  (void)open;
  told.step();
  told.step();
  told.trainer->finish();
  ASSERT_EQ(told.records().size(), 1u);
  EXPECT_EQ(told.records()[0]["step_first"], 10);
  int said = 0;
  for (const auto& line : told.t.output->logs()) {
    said += line.find("1 checkpoint or evaluation scope(s) opened and never closed") !=
            std::string::npos;
  }
  EXPECT_EQ(said, 1);
}

// The main process alone saves, as diffusers' scripts do; every rank restores. Rank 1 finds the
// step in rank 0's file, and so does a restarted job of another world size; a checkpoint saved by
// a relative path is found by its absolute one. A path no rank kept a step for keeps the numbering
// as it is, and nothing is said.
TEST(Training, ARankResumesAtTheStepAnotherRankSaved) {
  const std::string dir = ::testing::TempDir() + "vxperf-resume-ranks";
  std::filesystem::remove_all(dir);
  const std::map<std::string, std::string> env = {
      {"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}, {"VIDEOX_PERF_JSON", dir + "/r.jsonl"}};
  auto topology = [](int rank, int world) {
    Topology topo;
    topo.rank = rank;
    topo.world_size = world;
    return topo;
  };
  const std::string absolute = std::filesystem::current_path().string() + "/ck/step-3";
  {
    TrainRig main(0, env, topology(0, 4));
    main.three_steps_then_save("ck/step-3/");
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/.r.jsonl.rank0.checkpoints"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/.r.jsonl.rank1.checkpoints"));
  for (Topology topo : {topology(1, 4), topology(1, 2), topology(0, 1)}) {
    TrainRig rank(0, env, topo);
    rank.restore_then_two_steps(absolute);
    ASSERT_EQ(rank.records().size(), 1u) << topo.rank << "/" << topo.world_size;
    EXPECT_EQ(rank.records()[0]["step_first"], 3) << topo.rank << "/" << topo.world_size;
    EXPECT_EQ(rank.records()[0]["step_last"], 4);
  }
  TrainRig unknown(0, env, topology(2, 4));
  unknown.restore_then_two_steps("/pretrained/weights");
  ASSERT_EQ(unknown.records().size(), 1u);
  EXPECT_EQ(unknown.records()[0]["step_first"], 0);
  for (const auto& line : unknown.t.output->logs()) {
    EXPECT_EQ(line.find("checkpoint"), std::string::npos) << line;
  }
}

// VIDEOX_PERF_PROFILE's capture stopped after its last step (a torch profiler writes its trace
// then, often a large part of a second): no step's time, counted between the steps.
TEST(Training, StoppingTheCaptureIsNoStepsTime) {
  testing::TestEngine t(
      {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "4"}, {"VIDEOX_PERF_PROFILE", "steps:1-2"}});
  struct SlowStop : Observer {
    testing::ManualClock* clock;
    void on_capture(bool start) override {
      if (!start) clock->advance(0.4);
    }
  };
  auto stop = std::make_shared<SlowStop>();
  stop->clock = t.clock.get();
  t.engine->add_observer(stop);
  Trainer& trainer = t.engine->trainer();
  auto advance = [&](double s) { t.clock->advance(s); };
  for (int i = 0; i < 4; ++i) testing::train_step(trainer, advance, 16, 1, 0.1, 0.01);
  trainer.finish();
  Json w = Json::parse(t.output->records().at(0));
  EXPECT_NEAR(w["step_s_p95"].get<double>(), 0.11, 1e-9);  // step 3 did not pay for the stop
  EXPECT_NEAR(w["ledger"]["between_steps_s"].get<double>(), 0.4, 1e-9);
}

TEST(Training, ReadyAtCloseUsesDeviceTime) {
  TrainRig rig(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "1"}});
  rig.step();
  EXPECT_EQ(rig.trainer->pending_steps(), 0u);
  auto r = rig.records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NEAR(r[0]["phases_s"]["fwd"].get<double>(), 0.6, 1e-9);
  EXPECT_NEAR(r[0]["phases_s"]["bwd"].get<double>(), 1.2, 1e-9);  // recompute included
  EXPECT_NEAR(r[0]["phases_s"]["prep"].get<double>(), 0.01, 1e-9);
  EXPECT_EQ(rig.t.device->synchronize_count(), 0);  // no synchronize, ever
}

TEST(Training, APhaseCallTimesOnlyPlainCallPhases) {
  TrainRig rig(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "1"}});
  rig.step();
  {
    MicroStep micro(rig.trainer);
    {
      PhaseCall forward(Phase::kForward, rig.trainer);  // a model phase: not a call of its own
      PhaseCall optimizer(Phase::kOptimizer, rig.trainer);  // closes steps: its own scope only
      rig.work(0.3, 1.0);
    }
    PhaseCall clip(Phase::kClip, rig.trainer);  // the same as Clip
    rig.work(0.02);
  }
  {
    OptimizerStep o(&rig.opt, true, rig.trainer);
    rig.work(0.05);
  }
  auto r = rig.records();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[0]["phases_s"]["clip"].get<double>(), 0.03, 1e-9);
  EXPECT_NEAR(r[1]["phases_s"]["clip"].get<double>(), 0.03, 1e-9);
  // the 0.3 s under the refused scopes is the step's remainder (other), not fwd or another opt
  EXPECT_FALSE(r[1]["phases_s"].contains("fwd"));
  EXPECT_NEAR(r[1]["phases_s"]["other"].get<double>(), 0.37 - 0.03 - 0.075, 1e-9);
  EXPECT_NEAR(r[1]["phases_s"]["opt"].get<double>(), 0.075, 1e-9);
}

TEST(Training, LateEventsSettleLateFromTheDevice) {
  for (int lag : {1, 2}) {
    TrainRig rig(lag, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "1"}});
    rig.step();
    EXPECT_EQ(rig.trainer->pending_steps(), 1u) << "lag " << lag;
    for (int i = 0; i < lag; ++i) rig.step();
    auto r = rig.records();
    ASSERT_GE(r.size(), 1u) << "lag " << lag;
    EXPECT_NEAR(r[0]["phases_s"]["fwd"].get<double>(), 0.6, 1e-9) << "lag " << lag;
    EXPECT_EQ(rig.t.device->synchronize_count(), 0);
  }
}

TEST(Training, TooLateFallsBackToTheHostClock) {
  for (int lag : {3, 5, -1}) {
    TrainRig rig(lag, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "1"}});
    rig.step();
    rig.step();
    EXPECT_TRUE(rig.records().empty()) << "lag " << lag;
    rig.step();  // two more steps closed after it: read off the host clock
    auto r = rig.records();
    ASSERT_EQ(r.size(), 1u) << "lag " << lag;
    EXPECT_NEAR(r[0]["phases_s"]["fwd"].get<double>(), 0.4, 1e-9) << "lag " << lag;
    EXPECT_NEAR(r[0]["phases_s"]["bwd"].get<double>(), 0.8, 1e-9) << "lag " << lag;
  }
}

TEST(Training, FinishForcesPendingStepsOut) {
  TrainRig rig(-1, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "10"}});
  rig.step();
  rig.step();
  EXPECT_EQ(rig.trainer->pending_steps(), 2u);
  rig.t.engine->shutdown();
  EXPECT_EQ(rig.trainer->pending_steps(), 0u);
  auto r = rig.records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]["steps"], 2);
  EXPECT_EQ(rig.t.device->live_events(), 0);  // every event released
  auto logs = rig.t.output->logs();
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[1], "[Perf][rank0] === 2 steps | p50 1.28s/step p95 1.28s | 0.00h in-loop ===");
}

// The training's end: one final record after the last window, its ledger through the finish (an
// evaluation after the last step in its part, the rest between the steps), no log line of its
// own; a trace replays to it, at the trainer's finish rather than the engine's.
TEST(Training, TheFinalRecordCarriesTheLedgerThroughTheEnd) {
  const std::string dir = ::testing::TempDir() + "vxperf-train-end";
  std::filesystem::create_directories(dir);
  const std::string trace = dir + "/trace.jsonl";
  std::filesystem::remove(trace);
  TrainRig rig(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}, {"VIDEOX_PERF_TRACE", trace}});
  for (int i = 0; i < 3; ++i) rig.step();  // 1.28 s of host time each
  {
    Evaluation eval(rig.trainer);
    rig.work(1.5, 1.0);
  }
  rig.work(0.25, 1.0);  // the program's own teardown, in no scope
  const auto logs_before = rig.t.output->logs().size();
  rig.trainer->finish();
  rig.work(3.0, 1.0);  // the engine's shutdown comes later: not the training's
  rig.t.engine->shutdown();

  auto windows = rig.records();
  ASSERT_EQ(windows.size(), 2u);
  auto all = rig.t.output->all_records();
  ASSERT_EQ(all.size(), 3u);
  Json end = Json::parse(all.back());  // after the last window
  ASSERT_EQ(rig.t.output->ends().size(), 1u);
  EXPECT_EQ(end["kind"], "train_end");
  EXPECT_EQ(end["rank"], 0);
  EXPECT_EQ(end["world_size"], 1);
  EXPECT_EQ(end["step_first"], 0);
  EXPECT_EQ(end["step_last"], 2);
  EXPECT_EQ(end["steps"], 3);
  EXPECT_NEAR(end["after_last_step_s"].get<double>(), 1.5 + 0.25, 1e-9);
  const Json& l = end["ledger"];
  const double wall = 3 * 1.28 + 1.5 + 0.25;
  EXPECT_EQ(l["steps"], 3);
  EXPECT_NEAR(l["wall_s"].get<double>(), wall, 1e-9);
  EXPECT_NEAR(l["productive_s"].get<double>(), 3 * 1.28, 1e-9);
  EXPECT_NEAR(l["eval_s"].get<double>(), 1.5, 1e-9);
  EXPECT_NEAR(l["between_steps_s"].get<double>(), 0.25, 1e-9);
  EXPECT_NEAR(l["goodput"].get<double>(), 3 * 1.28 / wall, 1e-9);
  double parts = 0;
  for (const char* part : {"productive_s", "first_step_excess_s", "slow_step_excess_s",
                           "data_wait_s", "save_s", "restore_s", "eval_s", "between_steps_s"}) {
    parts += l[part].get<double>();
  }
  EXPECT_NEAR(parts, l["wall_s"].get<double>(), 1e-12);
  // The last window's ledger stops at its last step: the end's runs on from there.
  const Json& last = windows.back()["ledger"];
  EXPECT_NEAR(last["wall_s"].get<double>(), 3 * 1.28, 1e-9);
  EXPECT_NEAR(last["eval_s"].get<double>(), 0.0, 1e-12);
  // The partial window's line and the reference's summary, and nothing more, at finish.
  auto logs = rig.t.output->logs();
  ASSERT_EQ(logs.size(), logs_before + 2);
  EXPECT_EQ(logs[logs.size() - 2].rfind("[Perf][rank0] step 2-2 |", 0), 0u);
  EXPECT_EQ(logs.back(),
            "[Perf][rank0] === 3 steps | p50 1.28s/step p95 1.28s | 0.00h in-loop ===");
  // A second finish writes nothing more.
  rig.trainer->finish();
  EXPECT_EQ(rig.t.output->ends().size(), 1u);
  testing::expect_replay_reproduces(*rig.t.output, trace);
}

// A loop with no step settled has no ledger, and no final record.
TEST(Training, NoFinalRecordWithoutASettledStep) {
  TrainRig rig(0, {{"VIDEOX_PERF", "1"}});
  rig.t.engine->shutdown();
  EXPECT_TRUE(rig.t.output->all_records().empty());
}

TEST(Training, WindowRecordAndLogLine) {
  TrainRig rig(
      0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}, {"VIDEOX_PERF_TOTAL_STEPS", "102"}});
  rig.step();
  rig.step();
  auto r = rig.records();
  ASSERT_EQ(r.size(), 1u);
  const Json& w = r[0];
  EXPECT_EQ(w["kind"], "train_window");
  EXPECT_EQ(w["step_first"], 0);
  EXPECT_EQ(w["step_last"], 1);
  const Json& t = w["throughput"];
  EXPECT_EQ(t["flops_coef"], 3.0);
  EXPECT_EQ(t["flops_coef_hw"], 4.0);
  EXPECT_EQ(t["flops_coef_reason"], "full, ckpt on -> 3x/4x, attn from dims (60 modules)");
  EXPECT_EQ(t["priced_steps"], 2);
  EXPECT_NEAR(w["eta_s"].get<double>(), 100 * w["step_s_p50"].get<double>(), 1e-9);
  std::string line = rig.t.output->logs().at(0);
  EXPECT_EQ(line.rfind("[Perf][rank0] step 0-1 | ", 0), 0u) << line;
  EXPECT_NE(line.find("(MFU "), std::string::npos) << line;
  EXPECT_NE(line.find(" @989)"), std::string::npos) << line;
  EXPECT_NE(line.find("| ETA "), std::string::npos) << line;
}

TEST(Training, GradientAccumulationAndOwnership) {
  TrainRig rig(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "1"}});
  int critic = 0;
  for (int micro = 0; micro < 4; ++micro) {
    bool last = micro == 3;
    MicroStep m(rig.trainer);
    {
      ModelCall fwd(Phase::kForward, 1560, 4, rig.trainer);
      rig.work(0.1);
    }
    {
      OptimizerStep o(&rig.opt, last, rig.trainer);  // the first to close owns the boundary
      rig.work(0.01);
    }
    {
      OptimizerStep o(&critic, last, rig.trainer);  // its time lands in `opt`, no boundary
      rig.work(0.01);
    }
  }
  EXPECT_EQ(rig.trainer->steps_closed(), 1);
  auto r = rig.records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]["micro_steps"], 4.0);
  EXPECT_EQ(r[0]["throughput"]["samples"], 16.0);
}

TEST(Training, LargestModelWins) {
  TestEngine t;
  Trainer& trainer = t.engine->trainer();
  ModelInfo big;
  big.params = 1000;
  ModelInfo small;
  small.params = 10;
  trainer.register_model(big);
  trainer.register_model(small);
  int opt = 0;
  {
    MicroStep m(&trainer);
    ModelCall fwd(Phase::kForward, 100, 1, &trainer);
    t.clock->advance(1.0);
  }
  { OptimizerStep o(&opt, true, &trainer); }
  trainer.finish();
  Json w = Json::parse(t.output->records().at(0));
  EXPECT_EQ(w["throughput"]["params"], 1000);
}

TEST(Training, PhaseNames) {
  EXPECT_STREQ(phase_name(Phase::kVaeEncode), "vae_enc");
  EXPECT_STREQ(phase_name(Phase::kOther), "other");
  EXPECT_EQ(phase_from_name("text_encoder"), Phase::kTextEncoder);
  EXPECT_FALSE(phase_from_name("nope"));
}

}  // namespace
}  // namespace vxperf
