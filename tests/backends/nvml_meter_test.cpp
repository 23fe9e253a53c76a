// The NVML meter over the fake NVML (tests/support/fake_nvml), loaded through the same dlopen path
// as libnvidia-ml.so.1, with every reading scripted; then the engine reading it at request and
// window boundaries over the fake CUDA driver, which names devices by PCI bus id.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"
#include "vxperf/cuda_backend.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/nvml.h"
#include "vxperf/testing.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;
using testing::env_of;

constexpr int kNotSupported = 3;

// The fake's control API, resolved from the handle the meter's dlopen also gets.
struct FakeNvml {
  void* handle = nullptr;
  bool ok = true;
  void (*reset)() = nullptr;
  int (*add_device)(const char*) = nullptr;
  void (*script_energy_mj)(int, const unsigned long long*, int) = nullptr;
  void (*script_power_mw)(int, const unsigned*, int) = nullptr;
  void (*script_sm_mhz)(int, const unsigned*, int) = nullptr;
  void (*script_temp_c)(int, const unsigned*, int) = nullptr;
  void (*script_reasons)(int, const unsigned long long*, int) = nullptr;
  void (*set_result)(const char*, int) = nullptr;
  long (*calls)(const char*) = nullptr;
  int (*open)() = nullptr;

  explicit FakeNvml(const char* path) {
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      ok = false;
      return;
    }
    get(reset, "fake_nvml_reset");
    get(add_device, "fake_nvml_add_device");
    get(script_energy_mj, "fake_nvml_script_energy_mj");
    get(script_power_mw, "fake_nvml_script_power_mw");
    get(script_sm_mhz, "fake_nvml_script_sm_mhz");
    get(script_temp_c, "fake_nvml_script_temp_c");
    get(script_reasons, "fake_nvml_script_reasons");
    get(set_result, "fake_nvml_set_result");
    get(calls, "fake_nvml_calls");
    get(open, "fake_nvml_open");
  }
  ~FakeNvml() {
    if (handle != nullptr) dlclose(handle);
  }
  template <class Fn>
  void get(Fn& fn, const char* name) {
    fn = reinterpret_cast<Fn>(dlsym(handle, name));
    if (fn == nullptr) ok = false;
  }
  void energy(int d, std::vector<unsigned long long> v) {
    script_energy_mj(d, v.data(), static_cast<int>(v.size()));
  }
  void power(int d, std::vector<unsigned> v) {
    script_power_mw(d, v.data(), static_cast<int>(v.size()));
  }
  void sm(int d, std::vector<unsigned> v) {
    script_sm_mhz(d, v.data(), static_cast<int>(v.size()));
  }
  void temp(int d, std::vector<unsigned> v) {
    script_temp_c(d, v.data(), static_cast<int>(v.size()));
  }
  void reasons(int d, std::vector<unsigned long long> v) {
    script_reasons(d, v.data(), static_cast<int>(v.size()));
  }
};

// A clock that returns the given seconds in turn (the last one stays).
std::function<double()> scripted_clock(std::vector<double> times) {
  auto state = std::make_shared<std::pair<std::vector<double>, std::size_t>>(std::move(times), 0);
  return [state] {
    auto& [t, i] = *state;
    double v = t[std::min(i, t.size() - 1)];
    ++i;
    return v;
  };
}

class NvmlMeterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fake.ok) << dlerror();
    fake.reset();
  }

  NvmlOptions options(const char* path = VXPERF_FAKE_NVML_PATH) {
    NvmlOptions o;
    o.library_path = path;
    o.notice = [this](std::string_view line) { notices.emplace_back(line); };
    o.sample_period_s = 0;
    return o;
  }

  // One interval on `bus`, read over the meter's clock.
  DeviceReadings interval(DeviceMeter& meter, const std::string& bus = "0000:1B:00.0") {
    DeviceReadings r;
    std::uint64_t id = meter.begin(bus, 0);
    EXPECT_NE(id, 0u);
    if (id != 0) meter.end(id, r);
    return r;
  }

  FakeNvml fake{VXPERF_FAKE_NVML_PATH};
  std::vector<std::string> notices;
};

TEST_F(NvmlMeterTest, EnergyIsTheCounterDifferenceExactly) {
  int d = fake.add_device("0000:1B:00.0");
  fake.energy(d, {1000000, 1012345});
  fake.power(d, {300000, 500000});
  fake.sm(d, {1980, 1410});
  fake.temp(d, {60, 71});
  fake.reasons(d, {0x1, 0x4 | 0x20});
  NvmlOptions o = options();
  o.clock = scripted_clock({100.0, 102.5});
  auto meter = make_nvml_meter(o);
  ASSERT_NE(meter, nullptr);
  DeviceReadings r = interval(*meter);
  ASSERT_TRUE(r.energy_j);
  EXPECT_DOUBLE_EQ(*r.energy_j, 12.345);
  EXPECT_EQ(r.energy_from, "counter");
  EXPECT_DOUBLE_EQ(*r.power_w_mean, 12.345 / 2.5);
  EXPECT_EQ(r.sm_clock_mhz_min, 1410);
  EXPECT_EQ(r.temp_c_max, 71);
  // gpu_idle (0x1) is not a slowdown; the others by name, in bit order.
  EXPECT_EQ(*r.throttle, (std::vector<std::string>{"sw_power_cap", "sw_thermal_slowdown"}));
  EXPECT_EQ(fake.calls("nvmlDeviceGetTotalEnergyConsumption"), 2);
  EXPECT_TRUE(notices.empty());
  EXPECT_EQ(fake.open(), 1);
  meter.reset();
  EXPECT_EQ(fake.open(), 0);  // shut down with the meter
}

TEST_F(NvmlMeterTest, NoThrottleSeenIsAnEmptyList) {
  int d = fake.add_device("0000:1B:00.0");
  fake.reasons(d, {0x0});
  auto meter = make_nvml_meter(options());
  ASSERT_NE(meter, nullptr);
  DeviceReadings r = interval(*meter);
  ASSERT_TRUE(r.throttle);
  EXPECT_TRUE(r.throttle->empty());
}

TEST_F(NvmlMeterTest, PowerSamplesStandInWhereTheCounterIsNotSupported) {
  int d = fake.add_device("0000:1B:00.0");
  fake.set_result("nvmlDeviceGetTotalEnergyConsumption", kNotSupported);
  fake.power(d, {300000, 500000, 200000, 200000});
  NvmlOptions o = options();
  o.clock = scripted_clock({10.0, 12.0, 20.0, 21.0});
  auto meter = make_nvml_meter(o);
  ASSERT_NE(meter, nullptr);
  DeviceReadings first = interval(*meter);
  ASSERT_TRUE(first.energy_j);
  EXPECT_DOUBLE_EQ(*first.energy_j, 2.0 * (300 + 500) / 2);  // the trapezoid: 800 J
  EXPECT_EQ(first.energy_from, "power_samples");
  EXPECT_DOUBLE_EQ(*first.power_w_mean, 400.0);
  DeviceReadings second = interval(*meter);
  EXPECT_DOUBLE_EQ(*second.energy_j, 200.0);
  ASSERT_EQ(notices.size(), 1u);  // said once, naming the device and the reason
  EXPECT_NE(notices[0].find("0000:1B:00.0"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("not supported"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("power samples"), std::string::npos) << notices[0];
  EXPECT_EQ(fake.calls("nvmlDeviceGetTotalEnergyConsumption"), 1);  // asked once, then not
}

TEST_F(NvmlMeterTest, AnOlderLibraryWithoutTheCounterUsesPowerSamples) {
  FakeNvml old(VXPERF_FAKE_NVML_NO_ENERGY_PATH);
  ASSERT_TRUE(old.ok);
  old.reset();
  int d = old.add_device("0000:1B:00.0");
  old.power(d, {250000, 250000});
  NvmlOptions o = options(VXPERF_FAKE_NVML_NO_ENERGY_PATH);
  o.clock = scripted_clock({0.0, 4.0});
  auto meter = make_nvml_meter(o);
  ASSERT_NE(meter, nullptr);
  DeviceReadings r = interval(*meter);
  EXPECT_DOUBLE_EQ(*r.energy_j, 1000.0);
  EXPECT_EQ(r.energy_from, "power_samples");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("nvmlDeviceGetTotalEnergyConsumption"), std::string::npos);
}

TEST_F(NvmlMeterTest, TheSamplerAddsReadingsBetweenTheBoundaries) {
  int d = fake.add_device("0000:1B:00.0");
  fake.set_result("nvmlDeviceGetTotalEnergyConsumption", kNotSupported);
  fake.power(d, {250000});  // 250 W throughout
  NvmlOptions o = options();
  o.sample_period_s = 0.005;
  auto meter = make_nvml_meter(o);
  ASSERT_NE(meter, nullptr);
  DeviceReadings r;
  std::uint64_t id = meter->begin("0000:1B:00.0", 0);
  ASSERT_NE(id, 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  meter->end(id, r);
  EXPECT_GT(fake.calls("nvmlDeviceGetPowerUsage"), 3);  // the boundaries' two, and the sampler's
  EXPECT_EQ(r.energy_from, "power_samples");
  EXPECT_NEAR(*r.power_w_mean, 250.0, 1e-9);
  EXPECT_GT(*r.energy_j, 250.0 * 0.07);
}

TEST_F(NvmlMeterTest, NoSamplerWhileTheCounterIsRead) {
  fake.add_device("0000:1B:00.0");
  NvmlOptions o = options();
  o.sample_period_s = 0.002;
  auto meter = make_nvml_meter(o);
  ASSERT_NE(meter, nullptr);
  DeviceReadings r;
  std::uint64_t id = meter->begin("0000:1B:00.0", 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  meter->end(id, r);
  EXPECT_EQ(fake.calls("nvmlDeviceGetPowerUsage"), 2);  // the boundaries only
  EXPECT_EQ(r.energy_from, "counter");
}

TEST_F(NvmlMeterTest, ACounterGoingBackwardsLeavesTheEnergyOutOnce) {
  int d = fake.add_device("0000:1B:00.0");
  fake.energy(d, {5000, 4000, 3000, 2000, 2000, 2500});
  fake.power(d, {100000, 300000});
  auto meter = make_nvml_meter(options());
  ASSERT_NE(meter, nullptr);
  DeviceReadings bad = interval(*meter);
  EXPECT_FALSE(bad.energy_j);
  EXPECT_FALSE(bad.energy_from);
  EXPECT_DOUBLE_EQ(*bad.power_w_mean, 200.0);  // the power readings' mean stands
  DeviceReadings worse = interval(*meter);
  EXPECT_FALSE(worse.energy_j);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("went backwards"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("0000:1B:00.0"), std::string::npos) << notices[0];
  DeviceReadings good = interval(*meter);  // 2000 -> 2500 mJ
  EXPECT_DOUBLE_EQ(*good.energy_j, 0.5);
}

TEST_F(NvmlMeterTest, APowerReadingThatMakesNoSenseIsLeftOut) {
  int d = fake.add_device("0000:1B:00.0");
  fake.set_result("nvmlDeviceGetTotalEnergyConsumption", kNotSupported);
  fake.power(d, {300000, 4000000000u});
  auto meter = make_nvml_meter(options());
  ASSERT_NE(meter, nullptr);
  DeviceReadings r = interval(*meter);
  EXPECT_FALSE(r.energy_j);
  EXPECT_FALSE(r.power_w_mean);
  ASSERT_EQ(notices.size(), 2u);  // the counter's absence, then the reading
  EXPECT_NE(notices[1].find("100 kW"), std::string::npos) << notices[1];
}

TEST_F(NvmlMeterTest, ADeviceWithNoPciMatchIsNotMeteredAndSaidOnce) {
  fake.add_device("0000:1B:00.0");
  auto meter = make_nvml_meter(options());
  ASSERT_NE(meter, nullptr);
  EXPECT_EQ(meter->begin("0000:99:00.0", 3), 0u);
  EXPECT_EQ(meter->begin("0000:99:00.0", 3), 0u);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("cuda:3 (0000:99:00.0)"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("no device with this PCI bus id"), std::string::npos) << notices[0];
  EXPECT_EQ(fake.calls("nvmlDeviceGetHandleByPciBusId_v2"), 1);
  DeviceReadings ok = interval(*meter, "0000:1b:00.0");  // the other one still is
  EXPECT_EQ(ok.energy_from, "counter");
}

TEST_F(NvmlMeterTest, AReadingThatFailsIsLeftOutAndTheRestGoesOn) {
  int d = fake.add_device("0000:1B:00.0");
  fake.energy(d, {0, 7000});
  fake.set_result("nvmlDeviceGetTemperature", 999);
  fake.set_result("nvmlDeviceGetClockInfo", kNotSupported);
  auto meter = make_nvml_meter(options());
  ASSERT_NE(meter, nullptr);
  DeviceReadings r = interval(*meter);
  EXPECT_DOUBLE_EQ(*r.energy_j, 7.0);
  EXPECT_FALSE(r.temp_c_max);
  EXPECT_FALSE(r.sm_clock_mhz_min);
  EXPECT_EQ(notices.size(), 2u);
  EXPECT_EQ(fake.calls("nvmlDeviceGetTemperature"), 1);  // not asked again
}

TEST_F(NvmlMeterTest, ACancelledIntervalReadsNothing) {
  fake.add_device("0000:1B:00.0");
  auto meter = make_nvml_meter(options());
  ASSERT_NE(meter, nullptr);
  std::uint64_t id = meter->begin("0000:1B:00.0", 0);
  meter->cancel(id);
  DeviceReadings r;
  meter->end(id, r);
  EXPECT_FALSE(r.energy_j);
  EXPECT_EQ(fake.calls("nvmlDeviceGetTotalEnergyConsumption"), 1);
}

TEST_F(NvmlMeterTest, AnAbsentLibraryIsSaidOnceAndNoMeterMade) {
  EXPECT_EQ(make_nvml_meter(options("/nonexistent/libnvidia-ml.so.1")), nullptr);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("NVML not used: cannot load"), std::string::npos) << notices[0];
}

TEST_F(NvmlMeterTest, InitFailingIsSaidWithItsError) {
  fake.set_result("nvmlInit_v2", 9);  // NVML_ERROR_DRIVER_NOT_LOADED
  EXPECT_EQ(make_nvml_meter(options()), nullptr);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("nvmlInit_v2 failed: error 9 (Driver Not Loaded)"), std::string::npos)
      << notices[0];
}

TEST_F(NvmlMeterTest, ALibraryWithoutARequiredEntryPointIsNotNvml) {
  EXPECT_EQ(make_nvml_meter(options(VXPERF_FAKE_NVML_BROKEN_PATH)), nullptr);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("lacks nvmlDeviceGetHandleByPciBusId_v2"), std::string::npos)
      << notices[0];
}

// ---- the engine: requests and windows over the fake CUDA driver ---------------------------------

class NvmlEngineTest : public NvmlMeterTest {
 protected:
  void SetUp() override {
    NvmlMeterTest::SetUp();
    cuda = dlopen(VXPERF_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(cuda, nullptr) << dlerror();
    auto reset = reinterpret_cast<void (*)()>(dlsym(cuda, "fake_cuda_reset"));
    ASSERT_NE(reset, nullptr);
    reset();
  }
  void TearDown() override {
    if (cuda != nullptr) dlclose(cuda);
  }

  std::unique_ptr<Engine> engine(std::shared_ptr<DeviceMeter> meter,
                                 std::map<std::string, std::string> env = {{"VIDEOX_PERF", "1"}}) {
    CudaOptions c;
    c.library_path = VXPERF_FAKE_CUDA_PATH;
    c.notice = [this](std::string_view line) { notices.emplace_back(line); };
    EngineOptions parts;
    parts.settings = Settings::parse(env_of(std::move(env)), nullptr);
    parts.clock = clock;
    parts.device = make_cuda_backend(c);
    parts.meter = std::move(meter);
    parts.log = output->log_fn();
    parts.sinks.push_back(output);
    return std::make_unique<Engine>(std::move(parts));
  }

  void request(Engine& e, int device) {
    RequestScope r(e, RequestOptions{device, nullptr});
    StageScope s(kTransformer, 1024, 1);
    clock->advance(0.5);
  }

  void* cuda = nullptr;
  std::shared_ptr<testing::ManualClock> clock = std::make_shared<testing::ManualClock>();
  std::shared_ptr<testing::MemoryOutput> output = std::make_shared<testing::MemoryOutput>();
};

TEST_F(NvmlEngineTest, ARequestReadsTheNvmlDeviceWithItsPciBusIdNotItsOrdinal) {
  // NVML lists the devices in another order than CUDA does (CUDA_VISIBLE_DEVICES=1,0).
  int nvml0 = fake.add_device("0000:2B:00.0");  // cuda:1
  int nvml1 = fake.add_device("0000:1B:00.0");  // cuda:0
  fake.energy(nvml0, {5000, 7500});
  fake.energy(nvml1, {0, 900000});
  fake.sm(nvml0, {1755, 1830});
  NvmlOptions o = options();
  o.clock = scripted_clock({1.0, 1.5});
  auto e = engine(make_nvml_meter(o));
  request(*e, 1);
  auto requests = output->requests();
  ASSERT_EQ(requests.size(), 1u);
  ASSERT_TRUE(requests[0].peaks);
  EXPECT_DOUBLE_EQ(*requests[0].peaks->energy_j, 2.5);
  EXPECT_DOUBLE_EQ(*requests[0].peaks->power_w_mean, 5.0);
  EXPECT_EQ(requests[0].peaks->sm_clock_mhz_min, 1755);
  Json j = Json::parse(output->records().at(0));
  EXPECT_DOUBLE_EQ(j["energy_j"].get<double>(), 2.5);
  EXPECT_EQ(j["energy_from"], "counter");
  EXPECT_DOUBLE_EQ(j["power_w_mean"].get<double>(), 5.0);
  EXPECT_EQ(j["sm_clock_mhz_min"], 1755);
  EXPECT_EQ(j["temp_c_max"], 0);
  EXPECT_TRUE(j["throttle"].is_array());
  // The [Perf] line is the same as without NVML.
  for (const auto& line : output->logs()) EXPECT_EQ(line.find("energy"), std::string::npos) << line;
  EXPECT_TRUE(notices.empty());
}

TEST_F(NvmlEngineTest, OffMeansNoReadingAndTheReferenceRecord) {
  int d = fake.add_device("0000:1B:00.0");
  fake.energy(d, {0, 1000});
  auto e = engine(make_nvml_meter(options()), {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_NVML", "0"}});
  request(*e, 0);
  Json j = Json::parse(output->records().at(0));
  EXPECT_FALSE(j.contains("energy_j"));
  EXPECT_FALSE(j.contains("power_w_mean"));
  EXPECT_FALSE(j.contains("throttle"));
  EXPECT_TRUE(j.contains("peak_alloc_bytes"));
  EXPECT_EQ(fake.calls("nvmlDeviceGetTotalEnergyConsumption"), 0);
}

TEST_F(NvmlEngineTest, ADeviceNvmlCannotSeeKeepsItsRecordWithoutTheFields) {
  fake.add_device("0000:1B:00.0");  // cuda:0 only
  auto e = engine(make_nvml_meter(options()));
  request(*e, 1);
  request(*e, 1);
  auto records = output->records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(Json::parse(records[0]).contains("energy_j"));
  EXPECT_EQ(notices.size(), 1u);
}

TEST_F(NvmlEngineTest, AWindowGainsEnergyAndJoulesPerSample) {
  int d = fake.add_device("0000:1B:00.0");
  fake.energy(d, {10000, 40000});
  NvmlOptions o = options();
  o.clock = scripted_clock({0.0, 3.0});
  auto e = engine(make_nvml_meter(o), {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "100"}});
  Trainer& trainer = e->trainer();
  trainer.set_device(0);
  int optimizer = 0;
  for (int i = 0; i < 3; ++i) {
    MicroStep micro(&trainer);
    {
      ModelCall fwd(Phase::kForward, 1024, 2, &trainer);
      clock->advance(0.010);
    }
    OptimizerStep opt(&optimizer, true, &trainer);
    clock->advance(0.001);
  }
  trainer.finish();
  auto windows = output->windows();
  ASSERT_EQ(windows.size(), 1u);
  ASSERT_TRUE(windows[0].peaks);
  EXPECT_DOUBLE_EQ(*windows[0].peaks->energy_j, 30.0);
  EXPECT_DOUBLE_EQ(*windows[0].peaks->power_w_mean, 10.0);
  ASSERT_TRUE(windows[0].energy_j_per_sample);
  EXPECT_DOUBLE_EQ(*windows[0].energy_j_per_sample, 30.0 / 6);
  Json j;
  for (const auto& line : output->records()) j = Json::parse(line);
  EXPECT_DOUBLE_EQ(j["energy_j"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(j["energy_j_per_sample"].get<double>(), 5.0);
  EXPECT_EQ(fake.calls("nvmlDeviceGetTotalEnergyConsumption"), 2);
}

}  // namespace
}  // namespace vxperf
