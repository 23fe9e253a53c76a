// The fake CUDA driver (support/fake_cuda) opened and reset for one test, and engines over it on a
// manual clock writing to memory: what the meter tests read their requests and windows from.
// Needs VXPERF_FAKE_CUDA_PATH (the fake's path) and gtest.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "vxperf/cuda_backend.h"
#include "vxperf/engine.h"
#include "vxperf/testing.h"

namespace vxperf::testing {

struct FakeCudaEngines {
  void* cuda = nullptr;
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  std::shared_ptr<MemoryOutput> output = std::make_shared<MemoryOutput>();

  // Loads the fake driver and resets it (from a fixture's SetUp: it asserts).
  void open() {
    cuda = dlopen(VXPERF_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(cuda, nullptr) << dlerror();
    auto reset = reinterpret_cast<void (*)()>(dlsym(cuda, "fake_cuda_reset"));
    ASSERT_NE(reset, nullptr);
    reset();
  }
  // From a fixture's TearDown.
  void close() {
    if (cuda != nullptr) dlclose(cuda);
    cuda = nullptr;
  }

  // An engine with `env`'s settings over the fake driver, reading `meter` (the device's energy)
  // and `host_meter` (the host's), its driver's notices given to `notice`.
  std::unique_ptr<Engine> engine(std::map<std::string, std::string> env,
                                 std::shared_ptr<DeviceMeter> meter,
                                 std::shared_ptr<DeviceMeter> host_meter,
                                 std::function<void(std::string_view)> notice) {
    CudaOptions c;
    c.library_path = VXPERF_FAKE_CUDA_PATH;
    c.notice = std::move(notice);
    EngineOptions parts;
    parts.settings = Settings::parse(env_of(std::move(env)), nullptr);
    parts.clock = clock;
    parts.device = make_cuda_backend(c);
    parts.meter = std::move(meter);
    parts.host_meter = std::move(host_meter);
    parts.log = output->log_fn();
    parts.sinks.push_back(output);
    return std::make_unique<Engine>(std::move(parts));
  }
};

}  // namespace vxperf::testing
