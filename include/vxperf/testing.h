// Test doubles for programs that test their own instrumentation (and for vxperf's tests): an
// output that keeps every line and record in memory and an environment of given variables, beside
// the clock on virtual time and the scripted device of vxperf/simulation.h. A library of its own,
// vxperf::testing (libvxperf_testing), not part of libvxperf.
//
//   auto clock = std::make_shared<vxperf::ManualClock>(0.0);
//   auto out = std::make_shared<vxperf::testing::MemoryOutput>();
//   vxperf::EngineOptions options;
//   options.settings.level = 1;
//   options.clock = clock;
//   options.log = out->log_fn();
//   options.sinks.push_back(out);
//   vxperf::Engine engine(std::move(options));
//   { vxperf::RequestScope r(engine); clock->advance(1.5); }
//   assert(out->requests().at(0).e2e_s == 1.5);
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "vxperf/records.h"
#include "vxperf/settings.h"
#include "vxperf/simulation.h"
#include "vxperf/sink.h"

namespace vxperf::testing {

// The simulated clock and device, by their names here as well.
using vxperf::ManualClock;
using vxperf::SimulatedBackend;

// Keeps every log line and every record (as its JSON line and as the struct) in memory. Hand
// log_fn() to EngineOptions::log and the object itself to EngineOptions::sinks.
class MemoryOutput final : public RecordSink {
 public:
  // Appends to logs(); valid while this object lives.
  LogFn log_fn();
  void log(std::string_view line);
  void on_request(const RequestRecord& record, const RequestDetail& detail) override;
  void on_train_window(const TrainWindowRecord& record, const WindowDetail& detail) override;
  void on_train_end(const TrainEndRecord& record) override;

  std::vector<std::string> logs() const;
  // JSON lines of the requests and windows, in settle order (the two kinds a program's tests
  // have always counted).
  std::vector<std::string> records() const;
  // Every JSON line the records file would get, in settle order: the training's final record
  // (train_end) too.
  std::vector<std::string> all_records() const;
  std::vector<RequestRecord> requests() const;
  std::vector<RequestDetail> request_details() const;
  std::vector<TrainWindowRecord> windows() const;
  std::vector<TrainEndRecord> ends() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> logs_;
  std::vector<std::string> records_;
  std::vector<std::string> all_records_;
  std::vector<RequestRecord> requests_;
  std::vector<RequestDetail> request_details_;
  std::vector<TrainWindowRecord> windows_;
  std::vector<TrainEndRecord> ends_;
};

// An environment of the given variables, for Settings::parse.
EnvLookup env_of(std::map<std::string, std::string> vars);

}  // namespace vxperf::testing
