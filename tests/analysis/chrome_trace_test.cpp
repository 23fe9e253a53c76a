// Chrome trace-event files from event scripts: tracks, nesting, errors.
#include "vxperf/chrome_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "analysis_records.h"
#include "schema/event_kinds.h"
#include "vxperf/event_script.h"
#include "vxperf/phases.h"
#include "vxperf/vxperf.h"

namespace vxperf::analysis {
namespace {

using Json = nlohmann::json;
using namespace test_records;

Json trace_of(const std::vector<std::string>& paths) {
  TraceBuilder builder;
  for (const auto& path : paths) {
    std::ifstream in(path);
    builder.add_script(in, path);
  }
  Json j = Json::parse(builder.json());
  EXPECT_EQ(static_cast<std::int64_t>(j["traceEvents"].size()), builder.event_count());
  return j;
}

std::vector<Json> events_of(const Json& trace, const std::string& ph, const std::string& cat) {
  std::vector<Json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == ph && (cat.empty() || e.value("cat", "") == cat)) out.push_back(e);
  }
  return out;
}

TEST(ChromeTrace, InferenceRequestsEncloseTheirStages) {
  Json trace = trace_of({case_path("inference-1-00.events.jsonl")});
  auto requests = events_of(trace, "X", "request");
  auto stages = events_of(trace, "X", "stage");
  // A nested pipeline call is folded into the outer request, as the engine does.
  EXPECT_EQ(requests.size(), 3u);
  EXPECT_FALSE(stages.empty());
  for (const auto& s : stages) {
    if (s["args"].contains("outside_request")) continue;
    double t0 = s["ts"], t1 = t0 + s["dur"].get<double>();
    bool enclosed = std::any_of(requests.begin(), requests.end(), [&](const Json& r) {
      double r0 = r["ts"], r1 = r0 + r["dur"].get<double>();
      return r["tid"] == s["tid"] && t0 >= r0 - 1e-3 && t1 <= r1 + 1e-3;
    });
    EXPECT_TRUE(enclosed) << s.dump();
  }
  EXPECT_FALSE(events_of(trace, "C", "").empty());  // memory peaks from request_end
  EXPECT_FALSE(events_of(trace, "M", "").empty());
}

TEST(ChromeTrace, TrainingStepsAndPhases) {
  std::string path = case_path("training-2-02.events.jsonl");
  Json trace = trace_of({path});
  std::ifstream in(path);
  std::string line;
  std::size_t phases = 0, optimizer = 0, clips = 0;
  while (std::getline(in, line)) {
    if (line.find("\"ev\": \"phase\"") != std::string::npos) ++phases;
    if (line.find("\"ev\": \"optimizer_step\"") != std::string::npos) ++optimizer;
    if (line.find("\"ev\": \"clip\"") != std::string::npos) ++clips;
  }
  EXPECT_EQ(events_of(trace, "X", "phase").size(), phases);
  EXPECT_EQ(events_of(trace, "X", "optimizer").size(), optimizer);
  EXPECT_EQ(events_of(trace, "X", "clip").size(), clips);
  auto steps = events_of(trace, "X", "step");
  ASSERT_FALSE(steps.empty());
  // Steps follow one another without overlap.
  for (std::size_t i = 1; i < steps.size(); ++i) {
    EXPECT_GE(steps[i]["ts"].get<double>() + 1e-3,
              steps[i - 1]["ts"].get<double>() + steps[i - 1]["dur"].get<double>());
  }
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_TRUE(e.contains("pid") && e.contains("tid") && e["ts"].is_number());
    }
  }
}

TEST(ChromeTrace, OneProcessPerRankAndATrackPerThread) {
  std::string script =
      R"({"ev": "config", "env": {"VIDEOX_PERF": "1"}, "device": null, "rank": 1, "world_size": 2})"
      "\n"
      R"({"ev": "request_begin", "t": 1.0, "thread": 3})"
      "\n"
      R"({"ev": "stage", "name": "transformer", "t0": 1.1, "t1": 1.5, "device_ms": null})"
      "\n"
      R"({"ev": "request_end", "t": 2.0, "peak_alloc_bytes": 1073741824})"
      "\n"
      R"({"ev": "memory", "peak_alloc_bytes": 2147483648, "peak_reserved_bytes": 4294967296})"
      "\n";
  TraceBuilder builder;
  std::istringstream in(script);
  builder.add_script(in, "live.rank1");
  Json trace = Json::parse(builder.json());
  auto requests = events_of(trace, "X", "request");
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0]["pid"], 1);
  EXPECT_EQ(requests[0]["tid"], 4);
  EXPECT_DOUBLE_EQ(requests[0]["ts"].get<double>(), 1e6);
  EXPECT_DOUBLE_EQ(requests[0]["dur"].get<double>(), 1e6);
  bool named = false;
  for (const auto& e : events_of(trace, "M", "")) {
    if (e["name"] == "thread_name" && e["tid"] == 4) named = e["args"]["name"] == "thread 3";
  }
  EXPECT_TRUE(named);
  auto counters = events_of(trace, "C", "");
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_DOUBLE_EQ(counters[1]["args"]["peak_reserved_GiB"].get<double>(), 4.0);
}

TEST(ChromeTrace, ErrorsNameTheLine) {
  auto line_of = [](const std::string& script) {
    TraceBuilder builder;
    std::istringstream in(script);
    try {
      builder.add_script(in, "x");
    } catch (const ScriptError& e) {
      return e.line();
    }
    return 0;
  };
  std::string config = R"({"ev": "config", "env": {}})";
  EXPECT_EQ(line_of(R"({"ev": "request_begin", "t": 1})"), 1);
  EXPECT_EQ(line_of(config + "\n\n{broken\n"), 3);  // a whole line: an error
  EXPECT_EQ(line_of(config + "\n\n{broken"), 0);    // torn (no newline): skipped
  EXPECT_EQ(line_of(config + "\n" + R"({"ev": "stage", "name": "x", "t0": "a", "t1": 1})"), 2);
  EXPECT_EQ(line_of(config + "\n" + R"({"ev": "teleport", "t": 1})"), 2);
  EXPECT_EQ(line_of(config + "\n" + R"({"ev": "request_begin", "t": 1, "thread": -1})"), 2);
  EXPECT_EQ(line_of(config + "\n" + config), 2);
}

// Every kind an event script has (the event-kind table and the call phases' events), the
// measured peak and the topology set after the start included: a live trace holding them converts.
TEST(ChromeTrace, ConvertsEveryKindOfEvent) {
  std::string script = R"({"ev": "config", "env": {"VIDEOX_PERF": "1"}, "device": null}
{"ev": "peak", "dtype": "bf16", "tflops": 900.0, "device_index": 0}
{"ev": "topology", "rank": 0, "world_size": 2}
{"ev": "model", "stage": "transformer", "params": 1000}
{"ev": "request_begin", "t": 1.0}
{"ev": "stage", "name": "transformer", "t0": 1.1, "t1": 1.5, "device_ms": null}
{"ev": "request_end", "t": 2.0}
{"ev": "train_setup", "t": 2.5}
{"ev": "train_model", "params": 1000}
{"ev": "micro_enter", "t": 3.0}
{"ev": "phase", "name": "fwd", "t0": 3.1, "t1": 3.2, "device_ms": null}
{"ev": "micro_exit", "t": 3.3}
{"ev": "clip", "t0": 3.4, "t1": 3.45, "device_ms": null}
{"ev": "ema", "t0": 3.45, "t1": 3.5, "device_ms": null}
{"ev": "optimizer_step", "t0": 3.5, "t1": 3.6, "device_ms": null, "owner": "adam", "sync": true}
{"ev": "memory", "peak_alloc_bytes": 1024}
{"ev": "checkpoint_save", "t0": 3.7, "t1": 3.8, "device_ms": null, "bytes": 4096}
{"ev": "evaluation", "t0": 3.8, "t1": 3.85, "device_ms": null}
{"ev": "checkpoint_restore", "t0": 3.9, "t1": 3.95, "device_ms": null, "bytes": 4096, "resume_step": 0}
{"ev": "train_end", "t": 3.97}
{"ev": "finish", "t": 4.0}
)";
  std::set<std::string> written;
  std::istringstream lines(script);
  for (std::string line; std::getline(lines, line);) written.insert(Json::parse(line)["ev"]);
  for (const auto& row : internal::kEventKinds) {
    if (row.kind != internal::EventKind::kCall) EXPECT_EQ(written.count(row.name), 1u) << row.name;
  }
  for (const auto& phase : kPhases) {
    if (phase.event != nullptr) EXPECT_EQ(written.count(phase.event), 1u) << phase.event;
  }
  TraceBuilder builder;
  std::istringstream in(script);
  ASSERT_NO_THROW(builder.add_script(in, "live"));
  Json trace = Json::parse(builder.json());
  EXPECT_EQ(events_of(trace, "X", "request").size(), 1u);
  EXPECT_EQ(events_of(trace, "X", "clip").size(), 1u);
  auto outside = events_of(trace, "X", "outside");  // beside the steps, never in one
  ASSERT_EQ(outside.size(), 3u);
  EXPECT_EQ(outside[0]["name"], "save");
  EXPECT_EQ(outside[0]["args"]["bytes"], 4096);
  EXPECT_EQ(outside[1]["name"], "eval");
  EXPECT_EQ(outside[2]["name"], "restore");
  auto opt = events_of(trace, "X", "optimizer");
  ASSERT_EQ(opt.size(), 1u);
  EXPECT_EQ(opt[0]["name"], "opt");
  EXPECT_EQ(opt[0]["args"]["owner"], "adam");
  EXPECT_EQ(events_of(trace, "X", "step").size(), 1u);  // closed by the optimizer step
  // A point kind is drawn from its row: a mark of its name where `marked`, nothing otherwise.
  std::multiset<std::string> marks;
  for (const auto& e : events_of(trace, "i", "")) marks.insert(e["name"]);
  for (const auto& row : internal::kEventKinds) {
    if (row.point) EXPECT_EQ(marks.count(row.name), row.marked ? 1u : 0u) << row.name;
  }
}

TEST(ChromeTrace, AcceptsEveryConformanceScript) {
  for (const auto& entry : std::filesystem::directory_iterator(VXPERF_CASES_DIR)) {
    std::string path = entry.path().string();
    if (path.find(".events.jsonl") == std::string::npos) continue;
    TraceBuilder builder;
    std::ifstream in(path);
    EXPECT_NO_THROW(builder.add_script(in, path)) << path;
    EXPECT_NO_THROW((void)Json::parse(builder.json())) << path;
  }
}

// TraceWriter streams the very bytes TraceBuilder holds, for one script and for all together.
TEST(ChromeTrace, TheWriterStreamsTheBuildersDocument) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(VXPERF_CASES_DIR)) {
    std::string path = entry.path().string();
    if (path.find(".events.jsonl") != std::string::npos) paths.push_back(path);
  }
  std::sort(paths.begin(), paths.end());
  ASSERT_GT(paths.size(), 60u);
  auto both = [](const std::vector<std::string>& scripts) {
    TraceBuilder builder;
    std::ostringstream streamed;
    TraceWriter writer(streamed);
    for (const auto& path : scripts) {
      std::ifstream a(path), b(path);
      builder.add_script(a, path);
      writer.add_script(b, path);
    }
    writer.finish();
    EXPECT_EQ(writer.event_count(), builder.event_count());
    EXPECT_EQ(writer.warnings(), builder.warnings());
    return std::make_pair(builder.json(), streamed.str());
  };
  for (const auto& path : {paths.front(), paths.back()}) {
    auto [held, streamed] = both({path});
    EXPECT_EQ(held, streamed) << path;
  }
  auto [held, streamed] = both(paths);
  EXPECT_EQ(held, streamed);
  Json doc = Json::parse(streamed);
  EXPECT_EQ(doc["otherData"]["sources"].size(), paths.size());
  EXPECT_EQ(streamed.rfind("{\"traceEvents\":[", 0), 0u);
  // With no script, an empty document.
  std::ostringstream empty;
  TraceWriter none(empty);
  none.finish();
  EXPECT_EQ(empty.str(), TraceBuilder().json());
  EXPECT_NO_THROW((void)Json::parse(empty.str()));
}

// The first two complete events of one track that overlap without one holding the other, or ""
// when every slice nests (how Perfetto and chrome://tracing stack a track's slices).
std::string nesting_problem(const Json& trace) {
  struct Slice {
    double ts, end;
    std::string name;
  };
  std::map<std::pair<int, int>, std::vector<Slice>> tracks;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    double ts = e["ts"].get<double>();
    tracks[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
        Slice{ts, ts + e["dur"].get<double>(), e["name"].get<std::string>()});
  }
  constexpr double kSlack = 1e-3;  // microseconds: a nanosecond of rounding
  for (auto& [track, slices] : tracks) {
    std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.end > b.end;
    });
    std::vector<const Slice*> open;
    for (const Slice& s : slices) {
      while (!open.empty() && open.back()->end <= s.ts + kSlack) open.pop_back();
      if (!open.empty() && s.end > open.back()->end + kSlack) {
        return "pid " + std::to_string(track.first) + " tid " + std::to_string(track.second) +
               ": \"" + s.name + "\" [" + std::to_string(s.ts) + ", " + std::to_string(s.end) +
               "] overlaps \"" + open.back()->name + "\" [" + std::to_string(open.back()->ts) +
               ", " + std::to_string(open.back()->end) + "]";
      }
      open.push_back(&s);
    }
  }
  return "";
}

Json trace_of(const std::string& path) {
  TraceBuilder builder;
  std::ifstream in(path);
  builder.add_script(in, path);
  return Json::parse(builder.json());
}

TEST(ChromeTrace, EverySliceNestsInEveryConformanceScript) {
  int scripts = 0;
  for (const auto& entry : std::filesystem::directory_iterator(VXPERF_CASES_DIR)) {
    std::string path = entry.path().string();
    if (path.find(".events.jsonl") == std::string::npos) continue;
    ++scripts;
    EXPECT_EQ(nesting_problem(trace_of(path)), "") << path;
  }
  EXPECT_GT(scripts, 60);
}

// A live run's trace: requests served by two threads at once, and a training loop whose optimizer
// step runs inside its micro-step (so the step closes before the micro-step is left).
TEST(ChromeTrace, EverySliceNestsInALiveTrace) {
  std::string path = ::testing::TempDir() + "vxperf-nesting-" + std::to_string(::getpid());
  std::filesystem::remove(path);
  EngineOptions options;
  options.settings.level = 1;
  options.settings.every = 2;
  options.settings.trace_path = path;
  options.log = [](std::string_view) {};
  Engine engine(std::move(options));
  auto serve = [&engine] {
    for (int r = 0; r < 20; ++r) {
      RequestScope request(engine);
      { StageScope s(kTextEncoder); }
      for (int i = 0; i < 3; ++i) {
        StageScope s(kTransformer, 1024, 1);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      { StageScope s(kVaeDecode); }
    }
  };
  std::thread a(serve), b(serve);
  Trainer& trainer = engine.trainer();
  int optimizer = 0;
  for (int step = 0; step < 6; ++step) {
    for (int micro = 0; micro < 2; ++micro) {
      MicroStep m(&trainer);
      { ModelCall fwd(Phase::kForward, 1024, 1, &trainer); }
      { Backward bwd(&trainer); }
      if (micro == 1) {
        Clip clip(&trainer);
      }
      OptimizerStep opt(&optimizer, micro == 1, &trainer);
    }
  }
  a.join();
  b.join();
  engine.shutdown();
  Json trace = trace_of(path);
  EXPECT_EQ(nesting_problem(trace), "");
  // Each serving thread has a track of its own.
  std::set<std::string> threads;
  int requests = 0, micro_steps = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X" && e["cat"] == "request") ++requests;
    if (e["ph"] == "X" && e["cat"] == "micro") ++micro_steps;
  }
  EXPECT_EQ(requests, 40);
  EXPECT_EQ(micro_steps, 12);
  EXPECT_EQ(threads.size(), 3u);  // two request threads and training
  EXPECT_EQ(threads.count("training"), 1u);
}

}  // namespace
}  // namespace vxperf::analysis
