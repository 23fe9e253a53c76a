// The powercap meter over a fake powercap tree made in a temporary directory (zones, their
// energy_uj and max_energy_range_uj files, the links sysfs makes), then the engine reading it at
// request and window boundaries over the fake CUDA driver.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_cuda_engine.h"
#include "test_dir.h"
#include "test_support.h"
#include "vxperf/cuda_backend.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/powercap.h"
#include "vxperf/testing.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::env_of;

constexpr unsigned long long kRange = 262143328850ULL;  // a package zone's, as on a Xeon

class PowercapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = testing::fresh_test_dir("vxperf-powercap");
    fs::create_directories(root / "intel-rapl");  // the control type: no energy_uj
  }
  void TearDown() override { fs::remove_all(root); }

  // A zone directory at `dir` (relative to the root) named `name`, counting from `uj`.
  void zone(const std::string& dir, const std::string& name, unsigned long long uj,
            unsigned long long range = kRange) {
    fs::create_directories(root / dir);
    write(root / dir / "name", name);
    set(dir, uj);
    write(root / dir / "max_energy_range_uj", std::to_string(range));
  }
  void set(const std::string& dir, unsigned long long uj) {
    write(root / dir / "energy_uj", std::to_string(uj));
  }
  static void write(const fs::path& path, const std::string& text) {
    std::ofstream(path) << text << "\n";
  }
  // A host as sysfs shows one: two packages, a DRAM subzone linked at the top as well as under its
  // package, core and uncore subzones, the MMIO interface's duplicate package, a platform zone.
  void host() {
    zone("intel-rapl:0", "package-0", 1000000);
    zone("intel-rapl:0/intel-rapl:0:0", "core", 500000);
    zone("intel-rapl:0/intel-rapl:0:1", "dram", 200000);
    fs::create_directory_symlink(root / "intel-rapl:0/intel-rapl:0:1", root / "intel-rapl:0:1");
    fs::create_directory_symlink(root / "intel-rapl:0/intel-rapl:0:0", root / "intel-rapl:0:0");
    zone("intel-rapl:1", "package-1", 3000000);
    zone("intel-rapl-mmio:0", "package-0", 1000000);
    zone("intel-rapl:2", "psys", 9000000);
  }
  // Every counted zone moves on by `package`, `dram` uJ (the uncounted ones by much more).
  void draw(unsigned long long package0, unsigned long long package1, unsigned long long dram) {
    counters[0] += package0;
    counters[1] += package1;
    counters[2] += dram;
    set("intel-rapl:0", counters[0]);
    set("intel-rapl:1", counters[1]);
    set("intel-rapl:0/intel-rapl:0:1", counters[2]);
    set("intel-rapl:0/intel-rapl:0:0", counters[0] * 7);
    set("intel-rapl-mmio:0", counters[0] * 5);
    set("intel-rapl:2", counters[1] * 11);
  }

  PowercapOptions options() {
    PowercapOptions o;
    o.root = root.string();
    o.notice = [this](std::string_view line) { notices.emplace_back(line); };
    o.clock = [this] { return now; };
    return o;
  }

  DeviceReadings interval(DeviceMeter& meter, unsigned long long package0,
                          unsigned long long package1, unsigned long long dram) {
    std::uint64_t id = meter.begin("0000:1B:00.0", 0);
    EXPECT_NE(id, 0u);
    now += 1.0;
    draw(package0, package1, dram);
    DeviceReadings r;
    meter.end(id, r);
    return r;
  }
  // One interval of a second over which package 0's counter comes to `uj`.
  DeviceReadings package_interval(DeviceMeter& meter, unsigned long long uj) {
    std::uint64_t id = meter.begin("0000:1B:00.0", 0);
    EXPECT_NE(id, 0u);
    now += 1.0;
    set("intel-rapl:0", uj);
    DeviceReadings r;
    meter.end(id, r);
    return r;
  }

  fs::path root;
  std::vector<std::string> notices;
  double now = 100.0;
  unsigned long long counters[3] = {1000000, 3000000, 200000};
};

TEST_F(PowercapTest, PackagesAndDramAreCountedOnceEachAndNothingElse) {
  host();
  auto meter = make_powercap_meter(options());
  ASSERT_NE(meter, nullptr);
  DeviceReadings r = interval(*meter, 40000000, 30000000, 5000000);  // 40 J, 30 J, 5 J
  ASSERT_TRUE(r.cpu_energy_j);
  EXPECT_DOUBLE_EQ(*r.cpu_energy_j, 75.0);
  EXPECT_FALSE(r.energy_j);  // the host's, not the device's
  EXPECT_TRUE(notices.empty());
}

TEST_F(PowercapTest, ACounterThatWrapsAtItsRangeIsFollowedAcrossTheWrap) {
  zone("intel-rapl:0", "package-0", kRange - 1000000);
  auto meter = make_powercap_meter(options());
  ASSERT_NE(meter, nullptr);
  // Past the range: 1 J before the wrap, 2 J after.
  DeviceReadings r = package_interval(*meter, 2000000);
  EXPECT_DOUBLE_EQ(*r.cpu_energy_j, 3.0);
  EXPECT_TRUE(notices.empty());
}

TEST_F(PowercapTest, ACounterGoingBackwardsIsSaidOnceAndLeftOutAndMeasurementGoesOn) {
  zone("intel-rapl:0", "package-0", 50000000);
  auto meter = make_powercap_meter(options());
  ASSERT_NE(meter, nullptr);
  for (unsigned long long v : {40000000ULL, 30000000ULL}) {
    // A wrap would mean 262 kJ in a second: not one.
    DeviceReadings r = package_interval(*meter, v);
    EXPECT_FALSE(r.cpu_energy_j);
  }
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("intel-rapl:0 (package-0)"), std::string::npos) << notices[0];
  EXPECT_NE(notices[0].find("went backwards"), std::string::npos) << notices[0];
  DeviceReadings r = package_interval(*meter, 36000000);
  EXPECT_DOUBLE_EQ(*r.cpu_energy_j, 6.0);
}

TEST_F(PowercapTest, AFileThatCannotBeReadLaterIsSaidOnceAndLeftOut) {
  zone("intel-rapl:0", "package-0", 1000000);
  auto meter = make_powercap_meter(options());
  ASSERT_NE(meter, nullptr);
  std::uint64_t id = meter->begin("0000:1B:00.0", 0);
  fs::remove(root / "intel-rapl:0" / "energy_uj");
  fs::create_directory(root / "intel-rapl:0" / "energy_uj");  // reads fail, root or not
  DeviceReadings r;
  meter->end(id, r);
  EXPECT_FALSE(r.cpu_energy_j);
  DeviceReadings again = {};
  id = meter->begin("0000:1B:00.0", 0);
  meter->end(id, again);
  EXPECT_FALSE(again.cpu_energy_j);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("cannot read"), std::string::npos) << notices[0];
  fs::remove(root / "intel-rapl:0" / "energy_uj");
  set("intel-rapl:0", 5000000);
  // Readable again: from its next reading on.
  DeviceReadings back = package_interval(*meter, 7000000);
  EXPECT_DOUBLE_EQ(*back.cpu_energy_j, 2.0);
}

TEST_F(PowercapTest, NoZoneOrAnUnreadableOneMeansNoMeterSaidOnce) {
  EXPECT_EQ(make_powercap_meter(options()), nullptr);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("powercap not used: no RAPL package or DRAM zone"), std::string::npos)
      << notices[0];
  notices.clear();
  zone("intel-rapl:0", "package-0", 1000000);
  fs::remove(root / "intel-rapl:0" / "energy_uj");
  fs::create_symlink(root / "nowhere", root / "intel-rapl:0" / "energy_uj");
  EXPECT_EQ(make_powercap_meter(options()), nullptr);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("cannot read"), std::string::npos) << notices[0];
}

// Two intervals open at once share the host's energy as a device's is shared.
TEST_F(PowercapTest, OverlappingIntervalsShareTheHostByTime) {
  zone("intel-rapl:0", "package-0", 0);
  auto meter = make_powercap_meter(options());
  ASSERT_NE(meter, nullptr);
  now = 0;
  std::uint64_t a = meter->begin("0000:1B:00.0", 0);
  now = 1;
  set("intel-rapl:0", 100000000);  // 100 W
  std::uint64_t b = meter->begin("0000:2B:00.0", 1);
  now = 2;
  set("intel-rapl:0", 200000000);
  DeviceReadings ra, rb;
  meter->end(a, ra);
  now = 3;
  set("intel-rapl:0", 300000000);
  meter->end(b, rb);
  EXPECT_DOUBLE_EQ(*ra.cpu_energy_j, 150.0);
  EXPECT_DOUBLE_EQ(*rb.cpu_energy_j, 150.0);
}

// ---- the engine over the fake CUDA driver -------------------------------------------------------

class PowercapEngineTest : public PowercapTest {
 protected:
  void SetUp() override {
    PowercapTest::SetUp();
    driver.open();
  }
  void TearDown() override {
    driver.close();
    PowercapTest::TearDown();
  }

  std::unique_ptr<Engine> engine(std::map<std::string, std::string> env) {
    env.emplace("VIDEOX_PERF_NVML", "0");  // the host's energy alone
    return driver.engine(std::move(env), nullptr, make_powercap_meter(options()),
                         [this](std::string_view line) { notices.emplace_back(line); });
  }

  testing::FakeCudaEngines driver;
  std::shared_ptr<testing::MemoryOutput> output = driver.output;
};

TEST_F(PowercapEngineTest, RequestsAndWindowsOnADeviceCarryTheHostsEnergy) {
  zone("intel-rapl:0", "package-0", 1000000);
  auto e = engine({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "2"}});
  {
    RequestScope r(*e, RequestOptions{0, nullptr});
    set("intel-rapl:0", 13500000);  // 12.5 J
  }
  Trainer& trainer = e->trainer();
  trainer.set_device(0);
  set("intel-rapl:0", 20000000);  // setup, before the first step: no window's
  int optimizer = 0;
  for (int i = 0; i < 2; ++i) {
    MicroStep micro(&trainer);
    set("intel-rapl:0", 20000000 + 4000000 * (i + 1));
    OptimizerStep opt(&optimizer, true, &trainer);
  }
  trainer.finish();
  ASSERT_EQ(output->requests().size(), 1u);
  ASSERT_EQ(output->windows().size(), 1u);
  EXPECT_DOUBLE_EQ(*output->requests()[0].readings->cpu_energy_j, 12.5);
  EXPECT_DOUBLE_EQ(*output->windows()[0].readings->cpu_energy_j, 8.0);
  Json j = Json::parse(output->records().at(0));
  EXPECT_DOUBLE_EQ(j["cpu_energy_j"].get<double>(), 12.5);
  EXPECT_FALSE(j.contains("energy_j"));
  EXPECT_TRUE(notices.empty());
}

TEST_F(PowercapEngineTest, OffMeansNoHostReading) {
  zone("intel-rapl:0", "package-0", 1000000);
  auto e = engine({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_POWERCAP", "0"}});
  {
    RequestScope r(*e, RequestOptions{0, nullptr});
    set("intel-rapl:0", 13500000);
  }
  Json j = Json::parse(output->records().at(0));
  EXPECT_FALSE(j.contains("cpu_energy_j"));
  EXPECT_TRUE(j.contains("peak_alloc_bytes"));
}

}  // namespace
}  // namespace vxperf
