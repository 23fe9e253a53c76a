// Every reading a meter gives reaches the records: a fake meter fills every member of
// DeviceReadings (walked through its field table, so a member added later is filled too), and
// each is found in a request's and a training window's record with the value it was given.
// Nothing between the meter and the record names a reading (Context::add_meter_readings merges
// through the table, schema/held_fields.h): a step that dropped one fails here.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "schema/held_fields.h"
#include "schema/record_fields.h"
#include "schema/row_walk.h"
#include "test_support.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;
using internal::Row;

// A value for a member of each type a reading has, distinct per row.
struct Fill {
  int n = 0;
  void operator()(const Row&) {}
  template <class T>
  void operator()(const Row&, const T& member) {
    set(const_cast<T&>(member), ++n);
  }
  static void set(std::uint64_t& v, int n) { v = 1000u + static_cast<std::uint64_t>(n); }
  static void set(bool& v, int) { v = true; }
  static void set(std::optional<double>& v, int n) { v = 0.5 + n; }
  static void set(std::optional<std::int64_t>& v, int n) { v = 100 + n; }
  static void set(std::optional<std::string>& v, int n) { v = "reading" + std::to_string(n); }
  static void set(std::optional<std::vector<std::string>>& v, int n) {
    v = std::vector<std::string>{"reason" + std::to_string(n)};
  }
};

DeviceReadings every_reading() {
  DeviceReadings r;
  Fill fill;
  internal::walk_rows([&](auto& io) { internal::describe(io, r); }, fill);
  return r;
}

// Each row's member as a record's JSON carries it: {key: value}.
struct WriteJson {
  Json& out;
  void operator()(const Row&) {}
  template <class T>
  void operator()(const Row& row, const T& member) {
    put(row.key, member);
  }
  void put(const char* key, std::uint64_t v) { out[key] = v; }
  void put(const char* key, bool v) { out[key] = v; }
  template <class T>
  void put(const char* key, const std::optional<T>& v) {
    if (v) out[key] = *v;
  }
};

Json as_json(const DeviceReadings& r) {
  Json out = Json::object();
  WriteJson write{out};
  internal::walk_rows([&](auto& io) { internal::describe(io, r); }, write);
  return out;
}

// A meter whose every interval reads every reading.
struct EveryReadingMeter : DeviceMeter {
  std::uint64_t begin(const std::string&, int) override { return ++opened; }
  void end(std::uint64_t, DeviceReadings& readings) override {
    internal::merge_held(readings, every_reading());
  }
  void cancel(std::uint64_t) override {}
  std::uint64_t opened = 0;
};

// The simulated device, named by a PCI bus id (a device a meter can read).
class MeteredDevice final : public DeviceBackend {
 public:
  std::string kind() const override { return sim_.kind(); }
  bool available() const override { return sim_.available(); }
  std::string device_name(int device) override { return sim_.device_name(device); }
  EventId record(int device, void* stream) override { return sim_.record(device, stream); }
  bool query(EventId event) override { return sim_.query(event); }
  std::optional<double> elapsed_ms(EventId a, EventId b) override { return sim_.elapsed_ms(a, b); }
  void release(EventId event) override { sim_.release(event); }
  void synchronize(int device) override { sim_.synchronize(device); }
  void reset_peak_memory(int device) override { sim_.reset_peak_memory(device); }
  std::optional<DeviceReadings> peak_memory(int device) override {
    return sim_.peak_memory(device);
  }
  std::string pci_bus_id(int) override { return "00000000:01:00.0"; }

 private:
  testing::SimulatedBackend sim_{"NVIDIA H100 80GB HBM3"};
};

TEST(MeterReadings, MergeTakesWhatIsHeldAndLeavesTheRest) {
  DeviceReadings into;
  into.allocated = 5;
  into.power_w_mean = 1.0;
  DeviceReadings from;
  from.energy_j = 2.0;
  from.throttle = std::vector<std::string>{};
  internal::merge_held(into, from);
  EXPECT_EQ(into.allocated, 5u);                         // 0 in `from`: nothing read, kept
  EXPECT_EQ(into.power_w_mean, 1.0);                     // not read: kept
  EXPECT_EQ(into.energy_j, 2.0);                         // read: taken
  EXPECT_EQ(into.throttle, std::vector<std::string>{});  // read, no reason: taken
}

TEST(MeterReadings, EveryReadingAMeterGivesReachesTheRecords) {
  auto output = std::make_shared<testing::MemoryOutput>();
  auto clock = std::make_shared<testing::ManualClock>(100.0);
  EngineOptions options;
  options.settings =
      Settings::parse(testing::env_of({{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "1"}}), nullptr);
  options.clock = clock;
  options.device = std::make_shared<MeteredDevice>();
  options.log = output->log_fn();
  options.sinks.push_back(output);
  auto meter = std::make_shared<EveryReadingMeter>();
  options.meter = meter;
  options.host_meter = std::make_shared<EveryReadingMeter>();
  Engine engine(std::move(options));
  {
    RequestScope request(engine, RequestOptions{0, nullptr});
    StageScope stage(kTransformer, 16, 1);
    clock->advance(0.5);
  }
  Trainer& trainer = engine.trainer();
  trainer.set_device(0);
  testing::train_step(trainer, *clock, 16, 1, 0.5, 0.1);
  trainer.finish();
  ASSERT_GT(meter->opened, 0u);
  const Json expected = as_json(every_reading());
  ASSERT_GE(expected.size(), 10u);  // every reading, the peaks among them
  auto records = output->records();
  ASSERT_EQ(records.size(), 2u);
  for (const std::string& line : records) {
    Json record = Json::parse(line);
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      ASSERT_TRUE(record.contains(it.key())) << it.key() << " missing from " << line;
      EXPECT_EQ(record[it.key()], it.value()) << it.key() << " in " << line;
    }
  }
}

}  // namespace
}  // namespace vxperf
