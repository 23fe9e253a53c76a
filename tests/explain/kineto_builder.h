// A Kineto trace written event by event, for the explain tests that build their traces by hand
// (the critical path's, the replay's).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace vxperf::explain {

// A timestamp or duration as a trace holds it: a whole one bare, any other to 3 decimals.
inline std::string kineto_number(double v) {
  if (v == std::floor(v)) return std::to_string(static_cast<long long>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// The trace document of `events`; `head` (top-level keys, each line ending ",\n") before them.
inline std::string kineto_text(const std::vector<std::string>& events,
                               const std::string& head = "") {
  std::string s = "{\n  \"schemaVersion\": 1,\n" + head + "  \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) {
    s += "  " + events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  }
  return s + "  ],\n  \"traceName\": \"t\"\n}\n";
}

// A Kineto trace written event by event: host calls on pid 1, GPU rows on pid 0 with the stream
// as tid, as torch's profiler writes them.
class Kineto {
 public:
  Kineto& event(const std::string& cat, const std::string& name, long pid, long tid, double ts,
                double dur, const std::string& args = "") {
    events_.push_back("{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name +
                      "\", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) +
                      ", \"ts\": " + num(ts) + ", \"dur\": " + num(dur) +
                      (args.empty() ? "" : ", \"args\": {" + args + "}") + "}");
    return *this;
  }
  Kineto& step(int n, double ts, double dur, long tid = 1) {
    return event("user_annotation", "ProfilerStep#" + std::to_string(n), 1, tid, ts, dur);
  }
  Kineto& op(const std::string& name, double ts, double dur, long tid = 1) {
    return event("cpu_op", name, 1, tid, ts, dur, "\"External id\": 1");
  }
  Kineto& runtime(const std::string& name, double ts, double dur, long correlation, long tid = 1,
                  const std::string& cat = "cuda_runtime") {
    return event(cat, name, 1, tid, ts, dur, "\"correlation\": " + std::to_string(correlation));
  }
  Kineto& launch(double ts, double dur, long correlation, long tid = 1) {
    return runtime("cudaLaunchKernel", ts, dur, correlation, tid);
  }
  Kineto& kernel(const std::string& name, long stream, double ts, double dur, long correlation,
                 const std::string& cat = "kernel") {
    return event(cat, name, 0, stream, ts, dur,
                 "\"device\": 0, \"stream\": " + std::to_string(stream) +
                     ", \"correlation\": " + std::to_string(correlation));
  }
  // A cuda_sync event (the profiler's, with enable_cuda_sync_events): on a stream, or -1.
  Kineto& sync(const std::string& name, long stream, double ts, double dur, long correlation,
               long wait_on_stream = -1, long wait_on_record = -1) {
    return event("cuda_sync", name, 0, stream, ts, dur,
                 "\"cuda_sync_kind\": \"" + name +
                     "\", \"wait_on_stream\": " + std::to_string(wait_on_stream) +
                     ", \"wait_on_cuda_event_record_corr_id\": " + std::to_string(wait_on_record) +
                     ", \"stream\": " + std::to_string(stream) +
                     ", \"correlation\": " + std::to_string(correlation) + ", \"device\": 0");
  }
  std::string text() const { return kineto_text(events_); }

 private:
  static std::string num(double v) { return kineto_number(v); }
  std::vector<std::string> events_;
};

}  // namespace vxperf::explain
