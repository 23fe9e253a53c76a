// The NVML meter over the fake NVML (tests/support/fake_nvml), loaded through the same dlopen path
// as libnvidia-ml.so.1, with every reading scripted; then the engine reading it at request and
// window boundaries over the fake CUDA driver, which names devices by PCI bus id.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda_engine.h"
#include "fake_library.h"
#include "test_support.h"
#include "vxperf/cuda_backend.h"
#include "vxperf/engine.h"
#include "vxperf/event_script.h"
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
struct FakeNvml : testing::FakeLibrary {
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
  void (*draw)(int, double, double, double) = nullptr;
  void (*set_time)(double) = nullptr;
  void (*set_power_limit)(int, unsigned) = nullptr;

  explicit FakeNvml(const char* path) : FakeLibrary(path) {
    if (handle == nullptr) return;
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
    get(draw, "fake_nvml_draw");
    get(set_time, "fake_nvml_set_time");
    get(set_power_limit, "fake_nvml_set_power_limit");
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
  // A meter sampling every `sample_period_s` (`sampling`, kept for the test), and one interval on
  // cuda:0 held open for `held` of real time, for the sampler to wake in.
  void held_interval(double sample_period_s, std::chrono::milliseconds held, DeviceReadings& r) {
    NvmlOptions o = options();
    o.sample_period_s = sample_period_s;
    sampling = make_nvml_meter(o);
    ASSERT_NE(sampling, nullptr);
    std::uint64_t id = sampling->begin("0000:1B:00.0", 0);
    ASSERT_NE(id, 0u);
    std::this_thread::sleep_for(held);
    sampling->end(id, r);
  }

  // The meter's clock and the fake's time, moved together (drawing devices).
  void at(double t) {
    now = t;
    fake.set_time(t);
  }
  NvmlOptions drawn_options() {
    NvmlOptions o = options();
    o.clock = [this] { return now; };
    return o;
  }
  // A meter over one device drawing `watts` (its counter from `base_mj`, moving every
  // `period_s`), read at the times at() sets.
  std::shared_ptr<DeviceMeter> drawing_meter(double watts, double period_s, double base_mj) {
    fake.draw(fake.add_device("0000:1B:00.0"), watts, period_s, base_mj);
    return make_nvml_meter(drawn_options());
  }
  // An interval on `bus` opened at `t` (drawing devices), and one closed at `t`.
  std::uint64_t begin_at(DeviceMeter& meter, double t, const std::string& bus = "0000:1B:00.0",
                         int device = 0) {
    at(t);
    return meter.begin(bus, device);
  }
  DeviceReadings end_at(DeviceMeter& meter, double t, std::uint64_t id) {
    at(t);
    DeviceReadings r;
    meter.end(id, r);
    return r;
  }

  FakeNvml fake{VXPERF_FAKE_NVML_PATH};
  std::vector<std::string> notices;
  double now = 0;
  std::shared_ptr<DeviceMeter> sampling;
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
  DeviceReadings r;
  ASSERT_NO_FATAL_FAILURE(held_interval(0.005, std::chrono::milliseconds(80), r));
  EXPECT_GT(fake.calls("nvmlDeviceGetPowerUsage"), 3);  // the boundaries' two, and the sampler's
  EXPECT_EQ(r.energy_from, "power_samples");
  EXPECT_NEAR(*r.power_w_mean, 250.0, 1e-9);
  EXPECT_GT(*r.energy_j, 250.0 * 0.07);
}

TEST_F(NvmlMeterTest, NoSamplerWhileTheCounterIsRead) {
  int d = fake.add_device("0000:1B:00.0");
  fake.energy(d, {0, 500});  // a counter that moves (one that does not is power x time)
  DeviceReadings r;
  ASSERT_NO_FATAL_FAILURE(held_interval(0.002, std::chrono::milliseconds(20), r));
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
  int d = fake.add_device("0000:1B:00.0");
  fake.energy(d, {0, 500});
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

// ---- #28: the time share, short intervals, a stalled counter, the sampler
// ------------------------

// A server running two requests at once on one device: each moment's energy is split between the
// intervals open then, so that they add up to the counter over their union.
TEST_F(NvmlMeterTest, OverlappingIntervalsOnOneDeviceShareEachMomentAndAddUpToTheCounter) {
  auto meter = drawing_meter(250.0, 0.0, 1e6);
  ASSERT_NE(meter, nullptr);
  std::uint64_t a = begin_at(*meter, 10.0);
  std::uint64_t b = begin_at(*meter, 11.0);
  DeviceReadings rb = end_at(*meter, 12.0, b);
  DeviceReadings ra = end_at(*meter, 14.0, a);
  // A alone for 1 s (250 J), both for 1 s (250 J, half each), A alone for 2 s (500 J).
  ASSERT_TRUE(ra.energy_j && rb.energy_j);
  EXPECT_DOUBLE_EQ(*ra.energy_j, 250.0 + 125.0 + 500.0);
  EXPECT_DOUBLE_EQ(*rb.energy_j, 125.0);
  EXPECT_DOUBLE_EQ(*ra.energy_j + *rb.energy_j, 250.0 * 4);  // the counter over [10, 14]
  EXPECT_TRUE(ra.energy_shared);
  EXPECT_TRUE(rb.energy_shared);
  EXPECT_EQ(ra.energy_from, "counter");
  EXPECT_DOUBLE_EQ(*ra.power_w_mean, 875.0 / 4);  // its share over its own seconds
  EXPECT_DOUBLE_EQ(*rb.power_w_mean, 125.0);
  // Alone again: the whole counter, not shared.
  std::uint64_t c = begin_at(*meter, 20.0);
  DeviceReadings rc = end_at(*meter, 21.0, c);
  EXPECT_DOUBLE_EQ(*rc.energy_j, 250.0);
  EXPECT_FALSE(rc.energy_shared);
  EXPECT_TRUE(notices.empty());
}

TEST_F(NvmlMeterTest, OverlappingIntervalsOnTwoDevicesEachGetTheirOwnDevice) {
  int d0 = fake.add_device("0000:1B:00.0");
  int d1 = fake.add_device("0000:2B:00.0");
  fake.draw(d0, 250.0, 0.0, 0);
  fake.draw(d1, 300.0, 0.0, 0);
  auto meter = make_nvml_meter(drawn_options());
  ASSERT_NE(meter, nullptr);
  std::uint64_t a = begin_at(*meter, 0.0);
  std::uint64_t b = begin_at(*meter, 1.0, "0000:2B:00.0", 1);
  DeviceReadings ra = end_at(*meter, 2.0, a);
  DeviceReadings rb = end_at(*meter, 3.0, b);
  EXPECT_DOUBLE_EQ(*ra.energy_j, 500.0);
  EXPECT_DOUBLE_EQ(*rb.energy_j, 600.0);
  EXPECT_FALSE(ra.energy_shared);
  EXPECT_FALSE(rb.energy_shared);
}

// An energy counter that moves every 100 ms, read over 30 ms intervals: one over which it did not
// move gets the power read times its time, said by energy_from, never zero.
// Intervals of 30 ms on a 250 W device whose counter moves every 100 ms: each one that spans a
// step of the counter would take the whole step (25 J, 833 W). Once the update period is seen,
// every interval of fewer than three of them takes power x time (7.5 J); one that spans many
// takes the counter's difference. (Before #38, the ones that spanned a step took 25 J.)
TEST_F(NvmlMeterTest, ACounterThatMovesEvery100msGivesPowerTimesTimeOverShorterIntervals) {
  auto meter = drawing_meter(250.0, 0.1, 0);
  ASSERT_NE(meter, nullptr);
  int still = 0, moved = 0;
  for (int i = 0; i < 25; ++i) {
    std::uint64_t id = begin_at(*meter, 0.005 + 0.04 * i);
    DeviceReadings r = end_at(*meter, 0.035 + 0.04 * i, id);
    ASSERT_TRUE(r.energy_j) << i;
    if (r.energy_from == "power_x_time") {
      ++still;
      EXPECT_NEAR(*r.energy_j, 250.0 * 0.03, 1e-9) << i;
      EXPECT_NEAR(*r.power_w_mean, 250.0, 1e-9) << i;
    } else {
      ++moved;  // only before the counter's update period was seen
      EXPECT_LT(i, 4) << "a short interval took the counter's step after its period was seen";
    }
  }
  EXPECT_GE(still, 22);
  EXPECT_LE(moved, 1);
  // Over a second it moved ten times: the counter's difference.
  std::uint64_t id = begin_at(*meter, 2.0);
  DeviceReadings r = end_at(*meter, 3.0, id);
  EXPECT_EQ(r.energy_from, "counter");
  EXPECT_NEAR(*r.energy_j, 250.0, 1e-9);
  EXPECT_TRUE(notices.empty());
}

// No interval implies more than the device's enforced power limit: a counter that jumps by more
// than the limit allows over an interval is capped at the limit times its time, said once.
TEST_F(NvmlMeterTest, NoIntervalDrawsMoreThanTheEnforcedPowerLimit) {
  int d = fake.add_device("0000:1B:00.0");
  fake.set_power_limit(d, 300000);  // 300 W
  fake.energy(d, {1000000, 3000000, 3000000, 3100000});
  fake.power(d, {250000});
  auto meter = make_nvml_meter(drawn_options());
  ASSERT_NE(meter, nullptr);
  std::uint64_t id = begin_at(*meter, 10.0);
  DeviceReadings r = end_at(*meter, 11.0, id);  // 2000 J in one second
  ASSERT_TRUE(r.energy_j);
  EXPECT_DOUBLE_EQ(*r.energy_j, 300.0);
  EXPECT_DOUBLE_EQ(*r.power_w_mean, 300.0);
  id = begin_at(*meter, 20.0);
  r = end_at(*meter, 21.0, id);  // 100 J: under the limit, as read
  EXPECT_DOUBLE_EQ(*r.energy_j, 100.0);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("enforced power limit (300 W)"), std::string::npos) << notices[0];
}

TEST_F(NvmlMeterTest, ACounterThatStallsIsSaidOnceAndItsIntervalsLeftOut) {
  int d = fake.add_device("0000:1B:00.0");
  fake.energy(d, {0, 250000, 250000, 500000, 500000, 500000, 500000, 500000, 500000, 750000});
  fake.power(d, {250000});
  NvmlOptions o = options();
  o.clock = scripted_clock({0, 1, 1, 2, 2, 3.5, 3.5, 5, 5, 6});
  auto meter = make_nvml_meter(o);
  ASSERT_NE(meter, nullptr);
  std::vector<DeviceReadings> r;
  for (int i = 0; i < 5; ++i) r.push_back(interval(*meter));
  EXPECT_DOUBLE_EQ(*r[0].energy_j, 250.0);
  EXPECT_DOUBLE_EQ(*r[1].energy_j, 250.0);
  // 1.5 s without moving, on a counter that moved every second before: stalled.
  EXPECT_FALSE(r[2].energy_j);
  EXPECT_FALSE(r[2].energy_from);
  EXPECT_DOUBLE_EQ(*r[2].power_w_mean, 250.0);  // the power readings stand
  EXPECT_FALSE(r[3].energy_j);
  EXPECT_DOUBLE_EQ(*r[4].energy_j, 250.0);  // and on again once it moves
  EXPECT_EQ(r[4].energy_from, "counter");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("did not move over 1.500 s"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("0000:1B:00.0"), std::string::npos) << notices[0];
}

// Threads of this process (Linux: /proc/self/task).
int threads_now() {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// `o` with a sampler that never wakes within a test, on a clock reading 1, 2, 3, ... s that notes
// in `threads` how many threads the process had at each reading.
NvmlOptions noting_threads(NvmlOptions o, std::vector<int>& threads) {
  o.sample_period_s = 10;
  o.clock = [&threads] {
    threads.push_back(threads_now());
    return static_cast<double>(threads.size());
  };
  return o;
}

// A device without the counter: the sampler thread is running before the first interval's first
// reading, so that starting it is not in the interval.
TEST_F(NvmlMeterTest, TheSamplerRunsBeforeTheFirstIntervalOpens) {
  FakeNvml old(VXPERF_FAKE_NVML_NO_ENERGY_PATH);  // known at once: the library has no counter
  ASSERT_TRUE(old.ok);
  old.reset();
  int d = old.add_device("0000:1B:00.0");
  old.power(d, {250000});
  int before = threads_now();
  std::vector<int> at_readings;
  auto meter =
      make_nvml_meter(noting_threads(options(VXPERF_FAKE_NVML_NO_ENERGY_PATH), at_readings));
  ASSERT_NE(meter, nullptr);
  DeviceReadings r = interval(*meter);
  ASSERT_EQ(at_readings.size(), 2u);
  EXPECT_EQ(at_readings.front(), before + 1);  // the sampler was there at the first reading
  EXPECT_EQ(r.energy_from, "power_samples");
  EXPECT_DOUBLE_EQ(*r.energy_j, 250.0);
}

// NOT_SUPPORTED is learned at the first reading: the interval then starts once the sampler runs.
TEST_F(NvmlMeterTest, AnIntervalStartsAfterTheSamplerItsFirstReadingStarted) {
  int d = fake.add_device("0000:1B:00.0");
  fake.set_result("nvmlDeviceGetTotalEnergyConsumption", kNotSupported);
  fake.power(d, {250000});
  int before = threads_now();
  std::vector<int> at_readings;
  auto meter = make_nvml_meter(noting_threads(options(), at_readings));
  ASSERT_NE(meter, nullptr);
  DeviceReadings r = interval(*meter);
  ASSERT_EQ(at_readings.size(), 3u);  // the first reading, its time again, the end
  EXPECT_EQ(at_readings[0], before);
  EXPECT_EQ(at_readings[1], before + 1);
  EXPECT_DOUBLE_EQ(*r.energy_j, 250.0);  // from t=2, not t=1, to t=3
}

// A window closes at its last step's close: a partial window ended by finish() is read as of the
// close of its last step, not at finish.
TEST_F(NvmlMeterTest, EndAtMarkReadsAsOfTheLastMark) {
  auto meter = drawing_meter(250.0, 0.0, 0);
  ASSERT_NE(meter, nullptr);
  std::uint64_t id = begin_at(*meter, 0.0);
  at(1.0);
  meter->mark(id);
  at(2.0);
  meter->mark(id);
  at(7.0);  // after training: saving a checkpoint, evaluation
  DeviceReadings r;
  meter->end_at_mark(id, r);
  EXPECT_DOUBLE_EQ(*r.energy_j, 500.0);
  EXPECT_DOUBLE_EQ(*r.power_w_mean, 250.0);
  // Rolled: the next window opens at the same reading as the last one closes.
  std::uint64_t w0 = begin_at(*meter, 8.0);
  at(9.0);
  DeviceReadings r0;
  std::uint64_t w1 = meter->roll(w0, r0, "0000:1B:00.0", 0);
  ASSERT_NE(w1, 0u);
  DeviceReadings r1 = end_at(*meter, 11.0, w1);
  EXPECT_DOUBLE_EQ(*r0.energy_j, 250.0);
  EXPECT_DOUBLE_EQ(*r1.energy_j, 500.0);
  EXPECT_FALSE(r1.energy_shared);
}

// ---- the engine: requests and windows over the fake CUDA driver ---------------------------------

class NvmlEngineTest : public NvmlMeterTest {
 protected:
  void SetUp() override {
    NvmlMeterTest::SetUp();
    driver.open();
  }
  void TearDown() override { driver.close(); }

  // Without `host_meter`, the host's energy is off (VIDEOX_PERF_POWERCAP=0): these are NVML's.
  std::unique_ptr<Engine> engine(std::shared_ptr<DeviceMeter> meter,
                                 std::map<std::string, std::string> env = {{"VIDEOX_PERF", "1"}},
                                 std::shared_ptr<DeviceMeter> host_meter = nullptr) {
    if (!host_meter) env.emplace("VIDEOX_PERF_POWERCAP", "0");
    return driver.engine(std::move(env), std::move(meter), std::move(host_meter),
                         [this](std::string_view line) { notices.emplace_back(line); });
  }

  void request(Engine& e, int device) {
    RequestScope r(e, RequestOptions{device, nullptr});
    StageScope s(kTransformer, 1024, 1);
    clock->advance(0.5);
  }

  // The engine's clock, the meter's and the fake's time move together.
  void advance(double seconds) {
    clock->advance(seconds);
    fake.set_time(clock->now_s());
  }
  NvmlOptions timed_options() {
    NvmlOptions o = options();
    o.clock = [c = clock] { return c->now_s(); };
    return o;
  }
  // `steps` training steps of `step_s` seconds (2 samples each), after `setup_s` seconds of setup
  // between set_device and the first step.
  void train(Engine& e, double setup_s, int steps, double step_s) {
    Trainer& trainer = e.trainer();
    trainer.set_device(0);
    advance(setup_s);
    auto advance_both = [this](double s) { advance(s); };
    for (int i = 0; i < steps; ++i) {
      testing::train_step(trainer, advance_both, 1024, 2, step_s * 0.9, step_s * 0.1);
    }
    trainer.finish();
  }

  testing::FakeCudaEngines driver;
  std::shared_ptr<testing::ManualClock> clock = driver.clock;
  std::shared_ptr<testing::MemoryOutput> output = driver.output;
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
  ASSERT_TRUE(requests[0].readings);
  EXPECT_DOUBLE_EQ(*requests[0].readings->energy_j, 2.5);
  EXPECT_DOUBLE_EQ(*requests[0].readings->power_w_mean, 5.0);
  EXPECT_EQ(requests[0].readings->sm_clock_mhz_min, 1755);
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
  // set_device's reading (charged to nothing), the first step's start, the steps' closes.
  fake.energy(d, {10000, 10000, 40000});
  NvmlOptions o = options();
  o.clock = scripted_clock({0.0, 0.0, 3.0});
  auto e = engine(make_nvml_meter(o), {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "100"}});
  Trainer& trainer = e->trainer();
  trainer.set_device(0);
  for (int i = 0; i < 3; ++i) testing::train_step(trainer, *clock, 1024, 2, 0.010, 0.001);
  trainer.finish();
  auto windows = output->windows();
  ASSERT_EQ(windows.size(), 1u);
  ASSERT_TRUE(windows[0].readings);
  EXPECT_DOUBLE_EQ(*windows[0].readings->energy_j, 30.0);
  EXPECT_DOUBLE_EQ(*windows[0].readings->power_w_mean, 10.0);
  ASSERT_TRUE(windows[0].energy_j_per_sample);
  EXPECT_DOUBLE_EQ(*windows[0].energy_j_per_sample, 30.0 / 6);
  Json j;
  for (const auto& line : output->records()) j = Json::parse(line);
  EXPECT_DOUBLE_EQ(j["energy_j"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(j["energy_j_per_sample"].get<double>(), 5.0);
  // set_device's reading (DeviceMeter::prepare), the first step's start, then each step's close:
  // the last close is this partial window's end (#28; it was read at finish before).
  EXPECT_EQ(fake.calls("nvmlDeviceGetTotalEnergyConsumption"), 5);
}

// Issue #28: the setup between set_device and the first step (loading the model, wrapping it,
// building the optimizer) is no window's: a window's interval is its steps'.
TEST_F(NvmlEngineTest, TheSetupBeforeTheFirstStepIsNotInTheFirstWindow) {
  int d = fake.add_device("0000:1B:00.0");
  fake.draw(d, 250.0, 0.0, 5e6);
  auto e =
      engine(make_nvml_meter(timed_options()), {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "3"}});
  train(*e, 0.4, 6, 0.1);
  auto windows = output->windows();
  ASSERT_EQ(windows.size(), 2u);
  for (const auto& w : windows) {
    ASSERT_TRUE(w.readings && w.readings->energy_j && w.energy_j_per_sample && w.throughput);
    double wall = w.throughput->wall_s;
    std::printf("window %lld-%lld: %.3f J, %.1f W mean, %.1f W over its wall time, %.4f J/sample\n",
                static_cast<long long>(w.step_first), static_cast<long long>(w.step_last),
                *w.readings->energy_j, *w.readings->power_w_mean, *w.readings->energy_j / wall,
                *w.energy_j_per_sample);
    EXPECT_NEAR(*w.readings->energy_j, 250.0 * 0.3, 1e-6);
    EXPECT_NEAR(*w.readings->power_w_mean, 250.0, 1e-6);
    EXPECT_NEAR(*w.readings->energy_j / wall, 250.0, 1e-6);
    EXPECT_NEAR(*w.energy_j_per_sample, 250.0 * 0.3 / 6, 1e-6);
  }
  // The counter at set_device, at the first step's start and at every step's close; the clocks
  // only at the windows' boundaries (the first step's start, each window's last close).
  EXPECT_EQ(fake.calls("nvmlDeviceGetTotalEnergyConsumption"), 1 + 1 + 6);
  EXPECT_EQ(fake.calls("nvmlDeviceGetClockInfo"), 1 + 2);
}

// A device without the counter (NOT_SUPPORTED, learned by asking): set_device finds it and starts
// the power sampler, so that neither is in step 0 or in the first window's interval.
TEST_F(NvmlEngineTest, APowerOnlyDevicesSamplerStartsAtSetDeviceNotInTheFirstStep) {
  int d = fake.add_device("0000:1B:00.0");
  fake.set_result("nvmlDeviceGetTotalEnergyConsumption", kNotSupported);
  fake.draw(d, 250.0, 0.0, 0);
  NvmlOptions o = timed_options();
  o.sample_period_s = 10;  // never wakes within the test: the boundaries' readings alone
  auto e = engine(make_nvml_meter(o), {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "3"}});
  int before = threads_now();
  e->trainer().set_device(0);
  EXPECT_EQ(threads_now(), before + 1);  // the sampler, before any step
  EXPECT_EQ(fake.calls("nvmlDeviceGetTotalEnergyConsumption"), 1);
  train(*e, 0.4, 3, 0.1);  // its set_device(0) changes nothing
  auto windows = output->windows();
  ASSERT_EQ(windows.size(), 1u);
  ASSERT_TRUE(windows[0].readings && windows[0].readings->energy_j && windows[0].throughput);
  EXPECT_EQ(windows[0].readings->energy_from, "power_samples");
  EXPECT_NEAR(*windows[0].readings->energy_j, 250.0 * 0.3, 1e-6);
  EXPECT_NEAR(*windows[0].readings->energy_j / windows[0].throughput->wall_s, 250.0, 1e-6);
  EXPECT_EQ(fake.calls("nvmlDeviceGetTotalEnergyConsumption"), 1);  // never asked again
}

// Two requests served at once on one device (two threads): each moment's energy is split between
// them, their records say energy_shared and add up to the counter; a replay of the live trace
// gives the same readings, and the same energy per video.
TEST_F(NvmlEngineTest, TwoRequestsServedAtOnceShareTheDeviceAndReplayTheSame) {
  int d = fake.add_device("0000:1B:00.0");
  fake.draw(d, 250.0, 0.0, 0);
  std::string trace = (std::filesystem::temp_directory_path() /
                       ("vxperf-shared-" + std::to_string(::getpid()) + ".events.jsonl"))
                          .string();
  auto e = engine(make_nvml_meter(timed_options()),
                  {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_TRACE", trace}});
  std::promise<void> a_open, a_close, b_open, b_close;
  std::thread a([&, close = a_close.get_future()] {
    RequestScope r(*e, RequestOptions{0, nullptr});
    a_open.set_value();
    close.wait();
  });
  a_open.get_future().wait();
  advance(1.0);
  std::thread b([&, close = b_close.get_future()] {
    RequestOptions o{0, nullptr};
    o.videos = 4;  // a batch of four prompts
    RequestScope r(*e, o);
    b_open.set_value();
    close.wait();
  });
  b_open.get_future().wait();
  advance(1.0);
  b_close.set_value();
  b.join();
  advance(2.0);
  a_close.set_value();
  a.join();
  auto live = output->requests();
  ASSERT_EQ(live.size(), 2u);
  const RequestRecord& rb = live[0];  // settled first
  const RequestRecord& ra = live[1];
  ASSERT_TRUE(ra.readings && ra.readings->energy_j && rb.readings && rb.readings->energy_j);
  EXPECT_DOUBLE_EQ(*ra.readings->energy_j, 875.0);
  EXPECT_DOUBLE_EQ(*rb.readings->energy_j, 125.0);
  EXPECT_DOUBLE_EQ(*ra.readings->energy_j + *rb.readings->energy_j, 250.0 * 4);
  EXPECT_TRUE(ra.readings->energy_shared && rb.readings->energy_shared);
  EXPECT_FALSE(ra.videos);
  EXPECT_EQ(rb.videos, 4);
  EXPECT_DOUBLE_EQ(*rb.energy_j_per_video, 125.0 / 4);
  Json jb = Json::parse(output->records().at(0));
  EXPECT_EQ(jb["energy_shared"], true);
  EXPECT_EQ(jb["videos"], 4);
  EXPECT_DOUBLE_EQ(jb["energy_j_per_video"].get<double>(), 31.25);
  e->shutdown();
  e.reset();

  std::ifstream in(trace);
  ASSERT_TRUE(in.good());
  auto replayed = std::make_shared<testing::MemoryOutput>();
  replay(
      in, [](std::string_view) {}, *replayed);
  auto again = replayed->requests();
  ASSERT_EQ(again.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(again[i].readings && again[i].readings->energy_j) << i;
    EXPECT_DOUBLE_EQ(*again[i].readings->energy_j, *live[i].readings->energy_j) << i;
    EXPECT_EQ(again[i].readings->energy_shared, live[i].readings->energy_shared) << i;
    EXPECT_EQ(again[i].videos, live[i].videos) << i;
    EXPECT_EQ(again[i].energy_j_per_video, live[i].energy_j_per_video) << i;
  }
  std::filesystem::remove(trace);
}

// An evaluation request during training shares the device with the window it runs in: the two
// add up to the counter over the window.
TEST_F(NvmlEngineTest, AnEvalRequestDuringTrainingSharesTheWindowsDevice) {
  int d = fake.add_device("0000:1B:00.0");
  fake.draw(d, 250.0, 0.0, 0);
  auto e =
      engine(make_nvml_meter(timed_options()), {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}});
  Trainer& trainer = e->trainer();
  trainer.set_device(0);
  int optimizer = 0;
  for (int i = 0; i < 2; ++i) {
    if (i == 1) {
      RequestScope eval(*e, RequestOptions{0, nullptr});
      advance(0.2);
    }
    MicroStep micro(&trainer);
    {
      ModelCall fwd(Phase::kForward, 1024, 2, &trainer);
      advance(0.45);
    }
    OptimizerStep opt(&optimizer, true, &trainer);
    advance(0.05);
  }
  trainer.finish();
  auto windows = output->windows();
  auto requests = output->requests();
  ASSERT_EQ(windows.size(), 1u);
  ASSERT_EQ(requests.size(), 1u);
  double window_j = *windows[0].readings->energy_j;
  double request_j = *requests[0].readings->energy_j;
  EXPECT_DOUBLE_EQ(request_j, 250.0 * 0.2 / 2);
  EXPECT_DOUBLE_EQ(window_j, 250.0 * 1.2 - request_j);
  EXPECT_TRUE(windows[0].readings->energy_shared);
  EXPECT_TRUE(requests[0].readings->energy_shared);
  EXPECT_DOUBLE_EQ(*windows[0].energy_j_per_sample, window_j / 4);
}

}  // namespace
}  // namespace vxperf
