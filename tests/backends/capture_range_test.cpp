// VIDEOX_PERF_PROFILE over the fake CUDA driver: cuProfilerStart / cuProfilerStop around exactly
// the steps or requests named (what nsys --capture-range=cudaProfilerApi records), an observer
// told as the range starts and stops, and a range that never starts or never ends said at exit.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "test_support.h"
#include "vxperf/cuda_backend.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/observer.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using testing::env_of;

// What an observer was told of the range: (started, step or request index open then).
struct CaptureLog : Observer {
  std::vector<std::pair<bool, std::int64_t>> calls;
  std::int64_t open = -1;
  void on_begin(const Span& s) override {
    if (s.kind == SpanKind::kStep || s.kind == SpanKind::kRequest) open = s.index;
  }
  void on_capture(bool start) override { calls.emplace_back(start, open); }
};

class CaptureRangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cuda = dlopen(VXPERF_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(cuda, nullptr) << dlerror();
    get(reset, "fake_cuda_reset");
    get(profiling, "fake_cuda_profiling");
    get(captured, "fake_cuda_captured_records");
    get(records, "fake_cuda_records");
    get(calls, "fake_cuda_calls");
    get(fail, "fake_cuda_fail");
    reset();
  }
  void TearDown() override {
    e.reset();
    if (cuda != nullptr) dlclose(cuda);
  }
  template <class Fn>
  void get(Fn& fn, const char* name) {
    fn = reinterpret_cast<Fn>(dlsym(cuda, name));
    ASSERT_NE(fn, nullptr) << name;
  }

  void make(const std::string& profile) {
    CudaOptions c;
    c.library_path = VXPERF_FAKE_CUDA_PATH;
    c.notice = [this](std::string_view line) { notices.emplace_back(line); };
    EngineOptions parts;
    parts.settings = Settings::parse(env_of({{"VIDEOX_PERF", "1"},
                                             {"VIDEOX_PERF_NVML", "0"},
                                             {"VIDEOX_PERF_POWERCAP", "0"},
                                             {"VIDEOX_PERF_PROFILE", profile}}),
                                     nullptr);
    parts.clock = clock;
    parts.device = make_cuda_backend(c);
    parts.log = [this](std::string_view line) {
      if (line.rfind("[Perf][", 0) != 0) notices.emplace_back(line);  // not a record's line
    };
    parts.observers.push_back(log);
    e = std::make_unique<Engine>(std::move(parts));
  }

  // One training step on cuda:0: a forward and an optimizer step (events recorded for each).
  void step(Trainer& trainer) {
    MicroStep micro(&trainer);
    {
      ModelCall fwd(Phase::kForward, 1024, 1, &trainer);
      clock->advance(0.1);
      during.push_back(profiling());
    }
    OptimizerStep opt(&optimizer, true, &trainer);
    clock->advance(0.01);
  }
  // The engine's trainer on cuda:0, `steps` steps of it run.
  Trainer& train(int steps) {
    Trainer& trainer = e->trainer();
    trainer.set_device(0);
    for (int i = 0; i < steps; ++i) step(trainer);
    return trainer;
  }

  void* cuda = nullptr;
  void (*reset)() = nullptr;
  int (*profiling)() = nullptr;
  int (*captured)(int) = nullptr;
  int (*records)(int) = nullptr;
  long (*calls)(const char*) = nullptr;
  void (*fail)(const char*, int, int) = nullptr;
  std::shared_ptr<testing::ManualClock> clock = std::make_shared<testing::ManualClock>();
  std::shared_ptr<CaptureLog> log = std::make_shared<CaptureLog>();
  std::unique_ptr<Engine> e;
  std::vector<std::string> notices;
  std::vector<int> during;  // the fake's profiling device inside each step's forward
  int optimizer = 0;
};

TEST_F(CaptureRangeTest, StepsThreeToFiveAreCapturedAndNothingElse) {
  make("steps:3-5");
  Trainer& trainer = e->trainer();
  trainer.set_device(0);
  int records_before_3 = 0, records_after_5 = 0;
  for (int i = 0; i < 8; ++i) {
    if (i == 3) records_before_3 = records(0);
    step(trainer);
    if (i == 5) {
      records_after_5 = records(0);
      EXPECT_EQ(profiling(), -1) << "stopped as step 5 closed";
    }
  }
  trainer.finish();
  EXPECT_EQ(during, (std::vector<int>{-1, -1, -1, 0, 0, 0, -1, -1}));
  EXPECT_EQ(calls("cuProfilerStart"), 1);
  EXPECT_EQ(calls("cuProfilerStop"), 1);
  // Every event of steps 3-5 and none of the others' (the fake counts what it recorded while on).
  EXPECT_EQ(captured(0), records_after_5 - records_before_3);
  EXPECT_GT(captured(0), 0);
  // Started as step 3 began (step 2 the last one told), stopped after step 5 closed.
  EXPECT_EQ(log->calls, (std::vector<std::pair<bool, std::int64_t>>{{true, 2}, {false, 5}}));
  e->shutdown();
  EXPECT_TRUE(notices.empty()) << notices.front();
}

TEST_F(CaptureRangeTest, RequestsOneToTwoAreCaptured) {
  make("requests:1-2");
  std::vector<int> inside;
  for (int i = 0; i < 4; ++i) {
    RequestScope r(*e, RequestOptions{0, nullptr});
    StageScope s(kTransformer, 1024, 1);
    clock->advance(0.5);
    inside.push_back(profiling());
  }
  EXPECT_EQ(inside, (std::vector<int>{-1, 0, 0, -1}));
  EXPECT_EQ(calls("cuProfilerStart"), 1);
  EXPECT_EQ(calls("cuProfilerStop"), 1);
  EXPECT_EQ(log->calls, (std::vector<std::pair<bool, std::int64_t>>{{true, 0}, {false, 2}}));
}

TEST_F(CaptureRangeTest, ARangeThatNeverStartsIsSaidAtExit) {
  make("steps:10-12");
  train(4);
  e->shutdown();
  EXPECT_EQ(calls("cuProfilerStart"), 0);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("VIDEOX_PERF_PROFILE=steps:10-12: the run ended"), std::string::npos)
      << notices[0];
  EXPECT_NE(notices[0].find("nothing was captured"), std::string::npos) << notices[0];
}

TEST_F(CaptureRangeTest, ARangeThatNeverEndsIsStoppedAndSaidAtExit) {
  make("steps:2-9");
  train(5);
  EXPECT_EQ(profiling(), 0);
  e->shutdown();
  EXPECT_EQ(profiling(), -1);
  EXPECT_EQ(calls("cuProfilerStop"), 1);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("before step 9 closed"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("stopped at exit"), std::string::npos) << notices[0];
  ASSERT_EQ(log->calls.size(), 2u);
  EXPECT_FALSE(log->calls[1].first);
}

TEST_F(CaptureRangeTest, AProfilerCallThatFailsIsSaidOnceAndTrainingGoesOn) {
  make("steps:1-2");
  fail("cuProfilerStart", 999, 1);
  train(4).finish();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("cuProfilerStart failed"), std::string::npos) << notices[0];
  EXPECT_EQ(e->trainer().steps_closed(), 4);
  EXPECT_EQ(log->calls.size(), 2u);  // the observer's range all the same
}

TEST_F(CaptureRangeTest, NoRangeNoProfilerCall) {
  make("");
  train(3);
  e->shutdown();
  EXPECT_EQ(calls("cuProfilerStart"), 0);
  EXPECT_TRUE(log->calls.empty());
  EXPECT_TRUE(notices.empty());
}

}  // namespace
}  // namespace vxperf
