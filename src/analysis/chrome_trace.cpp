// Event scripts as Chrome trace-event JSON (what chrome://tracing and ui.perfetto.dev open).
//
// A process per rank; inference requests on a track per thread (the "thread" field a live trace
// puts on request_begin), training on its own track. Steps and requests enclose their stages,
// phases, clip and optimizer calls, and steps their micro-steps, so each track nests properly.
//
// The document is written as it is read: its head, then each event as it is made (dumped and
// forgotten), then its tail. What is kept is one script line and each script's open request, step
// and micro-step, never the events, so memory does not grow with the input.
#include "vxperf/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "schema/event_kinds.h"
#include "schema/json.h"
#include "schema/script_reader.h"
#include "schema/show_walk.h"
#include "vxperf/script_error.h"

namespace vxperf::analysis {
namespace {

using internal::EventKind;
using internal::Json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kTrainTid = 0;
constexpr int kRequestTidBase = 1;  // request thread N is tid 1 + N

using Event = internal::ScriptEvent;

// The pair's timing fields as trace arguments.
Json pair_args(const Event& ev) {
  Json args = Json::object();
  if (ev.has("device_ms")) args["device_ms"] = ev.number("device_ms");
  for (const char* f : {"tokens", "batch", "samples", "ready_after"}) {
    if (ev.has(f)) args[f] = ev.integer(f, 0);
  }
  return args;
}

// Where events go: each is dumped onto the stream as it is made, after a comma but for the first.
class EventStream {
 public:
  explicit EventStream(std::ostream& out) : out_(out) {}
  void write(const Json& e) {
    if (count_ > 0) out_.put(',');
    // Invalid UTF-8 in names is replaced rather than thrown on.
    out_ << e.dump(-1, ' ', false, Json::error_handler_t::replace);
    ++count_;
  }
  std::int64_t count() const { return count_; }

 private:
  std::ostream& out_;
  std::int64_t count_ = 0;
};

// One script's conversion state.
class Converter {
 public:
  Converter(EventStream& events, const std::string& name) : events_(events), name_(name) {}

  void event(const Event& ev) {
    const std::string kind = ev.kind();
    auto parsed = internal::parse_event_kind(kind);
    if (!parsed) ev.fail("unknown event \"" + kind + "\"");
    const internal::EventKindInfo& info = internal::event_kind_info(parsed->kind);
    if (info.point) {  // drawn from its row: a mark on the training's row, or nothing
      if (info.marked) {
        Json e = {{"name", info.name},           {"ph", "i"},   {"s", "p"},
                  {"ts", micros(time(ev, "t"))}, {"pid", pid_}, {"tid", kTrainTid}};
        push(std::move(e));
      }
      return;
    }
    switch (parsed->kind) {
      case EventKind::kConfig:
        config(ev);
        break;
      case EventKind::kModel:
      case EventKind::kTrainModel:
        ev.integer("params", 0);  // sizes only: no time on them
        break;
      case EventKind::kPeak:
      case EventKind::kTopology:
        break;  // what the run was priced with: no time on them
      case EventKind::kRequestBegin:
        request_begin(ev);
        break;
      case EventKind::kStage:
        stage(ev);
        break;
      case EventKind::kRequestEnd:
        request_end(ev);
        break;
      case EventKind::kMicroEnter: {
        double t = time(ev, "t");
        open_step(t);
        micro_t0_ = t;
        break;
      }
      case EventKind::kMicroExit: {
        double t = time(ev, "t");
        if (micro_t0_) {
          complete("micro-step", "micro", kTrainTid, *micro_t0_, t, Json::object());
          micro_t0_.reset();
        }
        break;
      }
      case EventKind::kPhase: {
        std::string name = ev.string("name");
        if (name.empty()) ev.fail("a phase event needs a \"name\"");
        double t0 = time(ev, "t0"), t1 = time(ev, "t1");
        open_step(t0);
        complete(name, "phase", kTrainTid, t0, t1, pair_args(ev));
        break;
      }
      case EventKind::kCall:
        call(ev, phase_info(parsed->call));
        break;
      case EventKind::kMemory:
        memory(ev, last_t_, nullptr);
        break;
      case EventKind::kFinish: {
        double t = time(ev, "t");
        finish(t);
        Json e = {{"name", "finish"}, {"ph", "i"},   {"s", "p"},
                  {"ts", micros(t)},  {"pid", pid_}, {"tid", kTrainTid}};
        push(std::move(e));
        break;
      }
      default:
        break;  // the points, drawn above (the every-kind test draws a script of every kind)
    }
  }

  void request_begin(const Event& ev) {
    double t = time(ev, "t");
    if (depth_++ > 0) return;  // a nested pipeline call belongs to the outer request
    std::int64_t thread = ev.integer("thread", 0);
    if (thread < 0 || thread > 1000000) ev.fail("\"thread\" is out of range");
    request_tid_ = kRequestTidBase + static_cast<int>(thread);
    name_thread(request_tid_,
                ev.has("thread") ? "thread " + std::to_string(thread) : std::string("requests"));
    request_t0_ = t;
    request_stages_ = 0;
  }

  void stage(const Event& ev) {
    std::string name = ev.string("name");
    if (name.empty()) ev.fail("a stage event needs a \"name\"");
    double t0 = time(ev, "t0"), t1 = time(ev, "t1");
    Json args = pair_args(ev);
    int tid = request_tid_;
    if (depth_ == 0) {
      args["outside_request"] = true;  // not measured by the engine
      tid = kRequestTidBase;
      name_thread(tid, "requests");
    } else {
      ++request_stages_;
    }
    complete(name, "stage", tid, t0, t1, std::move(args));
  }

  void request_end(const Event& ev) {
    double t = time(ev, "t");
    if (depth_ == 0) return;
    if (--depth_ > 0) return;
    Json args = {{"stages", request_stages_}};
    memory(ev, t, &args);
    complete("request #" + std::to_string(requests_++), "request", request_tid_, request_t0_, t,
             std::move(args));
  }

  // A call phase's slice, named as the phase; the step-bounding call (the optimizer step) with
  // its owner and sync, the first owner to really step closing the step, as in the engine.
  void call(const Event& ev, const PhaseInfo& phase) {
    double t0 = time(ev, "t0"), t1 = time(ev, "t1");
    Json args = pair_args(ev);
    if (phase.source == PhaseSource::kOutside) {  // a checkpoint or an evaluation: of no step
      if (ev.has("bytes")) args["bytes"] = ev.integer("bytes", 0);
      complete(phase.name, "outside", kTrainTid, t0, t1, std::move(args));
      return;
    }
    open_step(t0);
    if (!phase.bounds_step) {
      complete(phase.name, phase.name, kTrainTid, t0, t1, std::move(args));
      return;
    }
    std::string owner = ev.string("owner", "opt");
    bool sync = ev.boolean("sync", true);
    args["owner"] = owner;
    args["sync"] = sync;
    complete(phase.name, "optimizer", kTrainTid, t0, t1, std::move(args));
    if (sync && owner_.empty()) owner_ = owner;
    if (sync && owner == owner_) close_step(t1, false);
  }

  // End of the script: whatever is still open is shown up to the last time seen.
  void finish(double t) {
    if (step_t0_) close_step(std::max(t, *step_t0_), true);
    if (depth_ > 0) {
      complete("request #" + std::to_string(requests_++) + " (unfinished)", "request", request_tid_,
               request_t0_, std::max(t, request_t0_),
               {{"stages", request_stages_}, {"unfinished", true}});
      depth_ = 0;
    }
  }
  double last_t() const { return last_t_; }

 private:
  void config(const Event& ev) {
    if (configured_) ev.fail("a second config event");
    configured_ = true;
    std::int64_t rank = ev.integer("rank", 0);
    std::int64_t world = ev.integer("world_size", 1);
    if (rank < 0 || rank > 1000000 || world < 1) {
      ev.fail("rank and world_size do not describe a valid topology");
    }
    pid_ = static_cast<int>(rank);
    std::string label = "rank " + std::to_string(rank);
    if (ev.has("device")) label += " (" + ev.string("device") + ")";
    push({{"name", "process_name"}, {"ph", "M"}, {"pid", pid_}, {"args", {{"name", label}}}});
    push({{"name", "process_sort_index"},
          {"ph", "M"},
          {"pid", pid_},
          {"args", {{"sort_index", pid_}}}});
  }

  double time(const Event& ev, const char* field) {
    double t = ev.number(field);
    if (std::fabs(t) > 1e12) ev.fail(std::string("\"") + field + "\" is out of range");
    last_t_ = std::max(last_t_, t);
    return t;
  }

  static double micros(double seconds) { return seconds * 1e6; }

  void push(const Json& e) { events_.write(e); }

  void name_thread(int tid, const std::string& name) {
    if (named_.count(tid)) return;
    named_[tid] = true;
    push({{"name", "thread_name"},
          {"ph", "M"},
          {"pid", pid_},
          {"tid", tid},
          {"args", {{"name", name}}}});
    push({{"name", "thread_sort_index"},
          {"ph", "M"},
          {"pid", pid_},
          {"tid", tid},
          {"args", {{"sort_index", tid}}}});
  }

  void complete(const std::string& name, const char* category, int tid, double t0, double t1,
                Json args) {
    push({{"name", name},
          {"cat", category},
          {"ph", "X"},
          {"ts", micros(t0)},
          // From the two ends' own microseconds: a slice ending with its parent ends with it,
          // not a rounding error after.
          {"dur", std::max(micros(t1) - micros(t0), 0.0)},
          {"pid", pid_},
          {"tid", tid},
          {"args", std::move(args)}});
  }

  // A step runs from the previous step's close (data loading included) to its own close.
  void open_step(double t) {
    name_thread(kTrainTid, "training");
    if (!step_t0_) step_t0_ = step_next_t0_ ? std::min(*step_next_t0_, t) : t;
  }
  void close_step(double t, bool unfinished) {
    if (!step_t0_) return;
    if (micro_t0_) {
      // The optimizer call that closes a step runs inside the last micro-step, which the loop
      // leaves a moment later: the slice ends with its step, so that steps and micro-steps nest
      // (the rest is loop bookkeeping, counted in the next step's data wait).
      complete("micro-step", "micro", kTrainTid, *micro_t0_, std::max(t, *micro_t0_),
               {{"cut_at_step_end", true}});
      micro_t0_.reset();
    }
    std::string name = "step " + std::to_string(steps_++);
    Json args = Json::object();
    if (unfinished) {
      name += " (unfinished)";
      args["unfinished"] = true;
    }
    complete(name, "step", kTrainTid, *step_t0_, t, std::move(args));
    step_t0_.reset();
    step_next_t0_ = t;
  }

  // The device readings an event carries (request_end, memory), each number of their table
  // (src/schema/record_fields.h, every one a shown row) one counter: byte counts in GiB
  // ("peak_alloc_GiB").
  void memory(const Event& ev, double t, Json* args) {
    Json values = Json::object();
    internal::walk_shown(DeviceReadings{}, [&](const char*, const Show& show,
                                               const internal::ShownValue& v) {
      const char* key = show.key;
      if (v.list || !ev.has(key)) return;
      std::string name = key;
      const std::string bytes = "_bytes";
      if (name.size() > bytes.size() &&
          name.compare(name.size() - bytes.size(), bytes.size(), bytes) == 0) {
        name.replace(name.size() - bytes.size(), bytes.size(), "_GiB");
        values[name] = static_cast<double>(ev.count(key, 0)) / kGiB;
      } else {
        values[name] = ev.number(key);
      }
    });
    if (values.empty()) return;
    if (args) (*args)["memory"] = values;
    push({{"name", "memory"},
          {"ph", "C"},
          {"ts", micros(t)},
          {"pid", pid_},
          {"args", std::move(values)}});
  }

  EventStream& events_;
  std::string name_;
  bool configured_ = false;
  int pid_ = 0;
  std::map<int, bool> named_;
  double last_t_ = 0;
  int depth_ = 0;
  int request_tid_ = kRequestTidBase;
  double request_t0_ = 0;
  std::int64_t request_stages_ = 0;
  std::int64_t requests_ = 0;
  std::optional<double> micro_t0_;
  std::optional<double> step_t0_, step_next_t0_;
  std::int64_t steps_ = 0;
  std::string owner_;
};

// The document around the events: the head before the first, the tail after the last (keys in the
// order the whole document was once dumped in: traceEvents, displayTimeUnit, otherData).
constexpr const char* kHead = "{\"traceEvents\":[";
std::string tail(const std::vector<std::string>& sources) {
  Json other = {{"generator", "vxperf trace"}, {"sources", sources}};
  return "],\"displayTimeUnit\":\"ms\",\"otherData\":" +
         other.dump(-1, ' ', false, Json::error_handler_t::replace) + "}";
}

// One script read line by line into `events`; a warning for a torn last line.
void convert(std::istream& script, const std::string& name, EventStream& events,
             std::vector<std::string>& warnings) {
  Converter converter(events, name);
  bool any = false;
  int line = internal::read_script(
      script,
      [&](const Event& ev) {
        if (!any) {
          simdjson::dom::element kind;
          if (ev.json().at_key("ev").get(kind) != simdjson::SUCCESS || !kind.is_string() ||
              std::string_view(kind) != "config") {
            ev.fail("the first event must be a config event");
          }
          any = true;
        }
        converter.event(ev);
      },
      [&](int torn) {
        warnings.push_back(name + ": line " + std::to_string(torn) +
                           ": torn last line skipped (not complete JSON)");
      });
  if (!any) throw ScriptError(line, "the script is empty: it needs a config event first");
  converter.finish(converter.last_t());
}

}  // namespace

struct TraceWriter::Impl {
  explicit Impl(std::ostream& out) : out(out), events(out) {}
  std::ostream& out;
  EventStream events;
  bool started = false, finished = false;
  std::vector<std::string> sources;
  std::vector<std::string> warnings;

  void start() {
    if (finished) throw std::logic_error("vxperf trace: a script added after finish()");
    if (!started) out << kHead;
    started = true;
  }
};

TraceWriter::TraceWriter(std::ostream& out) : impl_(std::make_unique<Impl>(out)) {}
TraceWriter::~TraceWriter() = default;

void TraceWriter::add_script(std::istream& script, const std::string& name) {
  impl_->start();
  convert(script, name, impl_->events, impl_->warnings);
  impl_->sources.push_back(name);
}

void TraceWriter::finish() {
  impl_->start();
  impl_->out << tail(impl_->sources);
  impl_->finished = true;
}

const std::vector<std::string>& TraceWriter::warnings() const { return impl_->warnings; }
std::int64_t TraceWriter::event_count() const { return impl_->events.count(); }

// The whole document in memory: the events streamed into a string, the tail added on asking.
struct TraceBuilder::Impl {
  std::ostringstream events;
  EventStream stream{events};
  std::vector<std::string> sources;
  std::vector<std::string> warnings;
};

TraceBuilder::TraceBuilder() : impl_(std::make_unique<Impl>()) {}
TraceBuilder::~TraceBuilder() = default;

void TraceBuilder::add_script(std::istream& script, const std::string& name) {
  convert(script, name, impl_->stream, impl_->warnings);
  impl_->sources.push_back(name);
}

const std::vector<std::string>& TraceBuilder::warnings() const { return impl_->warnings; }

std::string TraceBuilder::json() const {
  return kHead + impl_->events.str() + tail(impl_->sources);
}

std::int64_t TraceBuilder::event_count() const { return impl_->stream.count(); }

}  // namespace vxperf::analysis
