// The engine's CUDA backend loaded on demand: the first request that names a device tries the
// driver once; without one, it says so once and times on the host.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/testing.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;

TEST(CudaOnDemand, AbsentDriverIsSaidOnceThenHostOnly) {
  if (void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
    dlclose(handle);
    GTEST_SKIP() << "a CUDA driver is loaded in this process";
  }
  if (void* handle = dlopen("libcuda.so.1", RTLD_LAZY)) {
    dlclose(handle);
    GTEST_SKIP() << "this host has a CUDA driver";
  }
  auto output = std::make_shared<testing::MemoryOutput>();
  EngineOptions parts;
  parts.settings.level = 1;
  parts.log = output->log_fn();
  parts.sinks.push_back(output);
  parts.cuda_on_demand = true;
  Engine engine(std::move(parts));
  for (int i = 0; i < 2; ++i) {
    RequestScope request(engine, RequestOptions{0, nullptr});
    StageScope s(kTransformer, 10, 1);
  }
  auto logs = output->logs();
  int notices = 0;
  for (const auto& l : logs) notices += l.rfind("[Perf][rank", 0) != 0;
  EXPECT_EQ(notices, 1);
  ASSERT_EQ(output->records().size(), 2u);
  EXPECT_FALSE(Json::parse(output->records()[0]).contains("device"));
}

// No I/O under the engine lock: the notice of the driver's absence reaches a log function that
// asks the engine for its topology (the engine lock) without deadlocking on it.
TEST(CudaOnDemand, ItsNoticeIsSaidOutsideTheEngineLock) {
  if (void* handle = dlopen("libcuda.so.1", RTLD_LAZY)) {
    dlclose(handle);
    GTEST_SKIP() << "this host has a CUDA driver";
  }
  Engine* engine = nullptr;
  std::vector<std::string> lines;
  EngineOptions parts;
  parts.settings.level = 1;
  parts.log = [&](std::string_view line) {
    lines.push_back(std::to_string(engine->topology().world_size) + " " + std::string(line));
  };
  parts.cuda_on_demand = true;
  Engine e(std::move(parts));
  engine = &e;
  { RequestScope request(e, RequestOptions{0, nullptr}); }
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("1 [Perf] CUDA backend not used"), std::string::npos) << lines[0];
}

}  // namespace
}  // namespace vxperf
