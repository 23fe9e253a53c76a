// NVTX ranges over the fake libnvToolsExt (tests/support/fake_nvtx): the names Nsight would show,
// in push/pop order, for a request and a training step; and the faults (absent, not NVTX).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "test_support.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/nvtx.h"
#include "vxperf/testing.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using testing::env_of;

class NvtxRangesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake = dlopen(VXPERF_FAKE_NVTX_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(fake, nullptr) << dlerror();
    reset = reinterpret_cast<void (*)()>(dlsym(fake, "fake_nvtx_reset"));
    log = reinterpret_cast<const char* (*)()>(dlsym(fake, "fake_nvtx_log"));
    ASSERT_TRUE(reset && log);
    reset();
  }
  void TearDown() override {
    if (fake != nullptr) dlclose(fake);
  }

  NvtxOptions options(const char* path = VXPERF_FAKE_NVTX_PATH) {
    NvtxOptions o;
    o.library_path = path;
    o.notice = [this](std::string_view line) { notices.emplace_back(line); };
    return o;
  }

  std::unique_ptr<Engine> engine(std::shared_ptr<Observer> ranges,
                                 std::map<std::string, std::string> env = {{"VIDEOX_PERF", "1"}}) {
    EngineOptions parts;
    parts.settings = Settings::parse(env_of(std::move(env)), nullptr);
    parts.clock = clock;
    parts.log = output->log_fn();
    parts.sinks.push_back(output);
    if (ranges) parts.observers.push_back(std::move(ranges));
    return std::make_unique<Engine>(std::move(parts));
  }

  void* fake = nullptr;
  void (*reset)() = nullptr;
  const char* (*log)() = nullptr;
  std::vector<std::string> notices;
  std::shared_ptr<testing::ManualClock> clock = std::make_shared<testing::ManualClock>();
  std::shared_ptr<testing::MemoryOutput> output = std::make_shared<testing::MemoryOutput>();
};

TEST_F(NvtxRangesTest, ARequestAndItsStagesArePushedAndPoppedByName) {
  auto ranges = make_nvtx_ranges(options());
  ASSERT_NE(ranges, nullptr);
  auto e = engine(ranges);
  {
    RequestScope r(*e, RequestOptions{});
    {
      StageScope s(kTextEncoder);
      clock->advance(0.1);
    }
    for (int i = 0; i < 2; ++i) {
      StageScope s(kTransformer, 1024, 1);
      clock->advance(0.2);
    }
  }
  EXPECT_EQ(std::string(log()),
            "push request 0\npush text_encoder\npop text_encoder\npush transformer\n"
            "pop transformer\npush transformer\npop transformer\npop request 0\n");
  EXPECT_TRUE(notices.empty());
  EXPECT_EQ(output->requests().size(), 1u);  // measurement as without ranges
}

TEST_F(NvtxRangesTest, AStepAndItsPhasesArePushedAndPopped) {
  auto ranges = make_nvtx_ranges(options());
  ASSERT_NE(ranges, nullptr);
  auto e = engine(ranges);
  Trainer& trainer = e->trainer();
  testing::train_step(trainer, *clock, 1024, 1, 0.010, 0.001);
  trainer.finish();
  std::string got = log();
  EXPECT_NE(got.find("push step 0\n"), std::string::npos) << got;
  EXPECT_NE(got.find("push micro_step\n"), std::string::npos) << got;
  EXPECT_NE(got.find("push fwd\npop fwd\n"), std::string::npos) << got;
  // Every push popped: the stack is empty at the end.
  std::size_t pushes = 0, pops = 0;
  for (std::size_t at = 0; (at = got.find("push ", at)) != std::string::npos; ++at) ++pushes;
  for (std::size_t at = 0; (at = got.find("pop ", at)) != std::string::npos; ++at) ++pops;
  EXPECT_EQ(pushes, pops) << got;
  EXPECT_EQ(got.find("pop (none)"), std::string::npos) << got;
}

TEST_F(NvtxRangesTest, AnAbsentLibraryIsSaidOnce) {
  EXPECT_EQ(make_nvtx_ranges(options("/nonexistent/libnvToolsExt.so.1")), nullptr);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("NVTX not used: cannot load"), std::string::npos) << notices[0];
}

TEST_F(NvtxRangesTest, ALibraryWithoutTheRangeCallsIsNotNvtx) {
  EXPECT_EQ(make_nvtx_ranges(options(VXPERF_FAKE_NVML_PATH)), nullptr);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("lacks nvtxRangePushA"), std::string::npos) << notices[0];
}

TEST_F(NvtxRangesTest, TheSettingLoadsTheLibraryOrSaysWhyNot) {
  // VIDEOX_PERF_NVTX=1 on a host without libnvToolsExt.so.1 (this one): one line, then on as
  // before; off by default: nothing said, nothing loaded.
  auto off = engine(nullptr);
  EXPECT_TRUE(output->logs().empty());
  if (void* real = dlopen("libnvToolsExt.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(real);
    GTEST_SKIP() << "libnvToolsExt.so.1 is loaded here";
  }
  auto on = engine(nullptr, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_NVTX", "1"}});
  auto logs = output->logs();
  bool said = false;
  for (const auto& l : logs) said = said || l.find("NVTX not used") != std::string::npos;
  if (void* real = dlopen("libnvToolsExt.so.1", RTLD_NOW)) {
    dlclose(real);
    EXPECT_FALSE(said);
  } else {
    EXPECT_TRUE(said);
  }
}

}  // namespace
}  // namespace vxperf
