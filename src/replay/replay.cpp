// Event-script reader and replay: every event drives the same engine calls a live run makes.
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "engine/engine_core.h"
#include "inference/request.h"
#include "inference/requests.h"
#include "schema/event_kinds.h"
#include "schema/script_reader.h"
#include "training/trainer_core.h"
#include "vxperf/engine.h"
#include "vxperf/event_script.h"
#include "vxperf/inference.h"
#include "vxperf/simulation.h"
#include "vxperf/stages.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using internal::EventKind;
using internal::Marker;
using internal::Request;

using Event = internal::ScriptEvent;

// The dtype a call's matmuls ran in ("dtype"), when the event says it.
std::optional<Dtype> call_dtype(const Event& ev) {
  if (!ev.has("dtype")) return std::nullopt;
  auto dtype = parse_dtype(ev.string("dtype"));
  if (!dtype) ev.fail("\"dtype\" is not a known dtype");
  return dtype;
}

// A call's fraction of a full forward ("frac", default 1).
double fraction(const Event& ev) {
  if (!ev.has("frac")) return 1.0;
  double f = ev.number("frac");
  if (f < 0.0 || f > 1.0) ev.fail("\"frac\" must be in [0, 1]");
  return f;
}

// ... of its attention products, where said apart ("afrac"; -1: as "frac").
double attn_fraction(const Event& ev) {
  if (!ev.has("afrac")) return -1.0;
  double f = ev.number("afrac");
  if (f < 0.0 || f > 1.0) ev.fail("\"afrac\" must be in [0, 1]");
  return f;
}

// The phases a "phase" event may time: the model calls and the backward (the phase table's);
// data, prep and other are the loop's, clip and the optimizer step have events of their own.
bool scripted(Phase phase) {
  PhaseSource source = phase_info(phase).source;
  return source == PhaseSource::kModelCall || source == PhaseSource::kBackward;
}

// "fwd, bwd, vae_enc, vae_dec, text_encoder, aux": the forward and the backward first.
std::string scripted_phases() {
  std::string names =
      std::string(phase_name(Phase::kForward)) + ", " + phase_name(Phase::kBackward);
  for (const PhaseInfo& info : kPhases) {
    if (scripted(info.phase) && info.phase != Phase::kForward && info.phase != Phase::kBackward) {
      names += std::string(", ") + info.name;
    }
  }
  return names;
}

// The layout an event's "parallel" object says (format v2), its sequence-parallel degree
// defaulting to `sp`.
ParallelSpec layout_of(const Event& ev, int sp) {
  ParallelSpec spec;
  spec.sp = sp;
  ev.read_object("parallel", spec);
  if (spec.sp < 0 || spec.tp < 0 || spec.group < 0 || spec.dp_rank < -1) {
    ev.fail("\"parallel\" does not describe a valid layout");
  }
  return spec;
}

class Replayer {
 public:
  Replayer(const LogFn& log, RecordSink& records, const ReplayOptions& options)
      : log_(log), records_(records), options_(options) {}

  void config(const Event& ev) {
    if (ev.kind() != "config") ev.fail("the first event must be a config event");
    std::map<std::string, std::string> env;
    if (ev.has("env")) {
      simdjson::dom::element e = ev.json()["env"];
      if (!e.is_object()) ev.fail("\"env\" must be an object");
      for (auto field : simdjson::dom::object(e)) {
        env[std::string(field.key)] = field.value.is_string()
                                          ? std::string(std::string_view(field.value))
                                          : simdjson::minify(field.value);
      }
    }
    for (const auto& [name, value] : options_.env_overrides) {
      if (value.empty()) {
        env.erase(name);
      } else {
        env[name] = value;
      }
    }
    EnvLookup lookup = [env](const std::string& name) -> std::optional<std::string> {
      auto it = env.find(name);
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    std::vector<std::string> problems;
    Settings settings = Settings::parse(lookup, &problems);
    for (const auto& p : problems) log_(p);
    if (!settings.enabled()) return;  // off: nothing is measured, nothing is written
    // Replay writes to its own output only: never to the files the live run named.
    settings.json_path.clear();
    settings.trace_path.clear();

    std::optional<std::string> device_name;
    if (ev.has("device")) device_name = ev.string("device");
    EngineOptions parts;
    parts.settings = settings;
    clock_ = std::make_shared<ManualClock>();
    parts.clock = clock_;
    if (device_name) {
      simulated_ = std::make_shared<SimulatedBackend>(*device_name);
      parts.device = simulated_;
      device_ = static_cast<int>(ev.integer("device_index", 0));
    }
    parts.log = log_;
    parts.sinks.push_back(std::shared_ptr<RecordSink>(&records_, [](RecordSink*) {}));
    std::int64_t rank = ev.integer("rank", 0);
    std::int64_t world = ev.integer("world_size", 1);
    std::int64_t sp = ev.integer("sp", 1);
    // A rank at or above the world size is replayed as the live run took it (with a warning).
    if (world < 1 || rank < 0 || sp < 1 || rank > INT32_MAX || world > INT32_MAX ||
        sp > INT32_MAX) {
      ev.fail("rank, world_size and sp do not describe a valid topology");
    }
    parts.topology.rank = static_cast<int>(rank);
    parts.topology.world_size = static_cast<int>(world);
    parts.topology.sp = static_cast<int>(sp);
    if (ev.has("process_start")) parts.process_start_s = ev.number("process_start");
    if (ev.has("attempt")) {
      std::int64_t attempt = ev.integer("attempt", 0);
      if (attempt < 0 || attempt > INT32_MAX) ev.fail("\"attempt\" must be a restart count");
      parts.topology.attempt = static_cast<int>(attempt);
    }
    if (ev.has("parallel")) {
      set_parallel_spec(parts.topology, layout_of(ev, static_cast<int>(sp)));
    } else {
      parts.topology.v1 = true;  // priced as the reference prices it
    }
    engine_ = std::make_unique<Engine>(std::move(parts));
    core_ = &internal::core_of(*engine_);
  }

  void event(const Event& ev) {
    std::string name = ev.kind();
    auto parsed = internal::parse_event_kind(name);
    if (!parsed) ev.fail("unknown event \"" + name + "\"");
    if (parsed->kind == EventKind::kConfig) ev.fail("a second config event");
    if (!engine_) return;  // off: the script is read, nothing is measured
    switch (parsed->kind) {
      case EventKind::kConfig:
        break;
      case EventKind::kModel: {
        ModelInfo info;
        ev.read(info, /*training=*/false);
        engine_->declare_model(ev.string("stage", stage_info(KnownStage::kTransformer).name), info);
        break;
      }
      case EventKind::kRequestBegin:
        if (request_ != nullptr) {
          ++nested_;  // a nested pipeline call: the outer request owns it
          return;
        }
        clock_->set(ev.number("t"));
        {
          RequestOptions options{device_, nullptr};
          options.videos = ev.count("videos", 1);
          if (options.videos < 1) ev.fail("\"videos\" must be at least 1");
          options.queue_s = ev.optional_number("queue_s").value_or(-1);
          if (ev.has("queue_s") && !(options.queue_s >= 0)) {
            ev.fail("\"queue_s\" must be at least 0");
          }
          options.denoising_steps = ev.count("denoising_steps", 0);
          if (ev.has("denoising_steps") && options.denoising_steps < 1) {
            ev.fail("\"denoising_steps\" must be at least 1");
          }
          options.frames = ev.count("frames", 0);
          options.fps = ev.optional_number("fps").value_or(0);
          if (options.frames < 0 || options.fps < 0 || (options.frames > 0) != (options.fps > 0)) {
            ev.fail("\"frames\" and \"fps\" go together, both above 0");
          }
          request_ = core_->requests().begin(options);
        }
        break;
      case EventKind::kStage:
        stage(ev);
        break;
      case EventKind::kRequestEnd: {
        if (nested_ > 0) {
          --nested_;
          return;
        }
        if (request_ == nullptr) return;
        if (simulated_) update_readings(ev);
        clock_->set(ev.number("t"));
        Request* request = request_;
        request_ = nullptr;
        core_->requests().end(request, false);
        break;
      }
      case EventKind::kTrainModel: {
        ModelInfo info;
        ev.read(info, /*training=*/true);
        trainer().set_model(info);
        break;
      }
      case EventKind::kMicroEnter: {
        double t = ev.number("t");
        clock_->set(t);
        trainer().enter_micro(t);
        break;
      }
      case EventKind::kMicroExit: {
        double t = ev.number("t");
        clock_->set(t);
        trainer().exit_micro(t);
        break;
      }
      case EventKind::kPhase:
        phase(ev);
        break;
      case EventKind::kCall:
        call(ev, parsed->call);
        break;
      case EventKind::kPeak: {
        auto dtype = parse_dtype(ev.string("dtype", "bf16"));
        if (!dtype) ev.fail("\"dtype\" is not a known dtype");
        MeasuredPeak peak;
        peak.dtype = *dtype;
        peak.tflops = ev.number("tflops");
        if (!(peak.tflops > 0)) ev.fail("\"tflops\" must be positive");
        // The live run's host stays the host; its device is the one this replay simulates.
        engine_->set_measured_peak(ev.integer("device_index", -1) < 0 ? -1 : device_, peak);
        break;
      }
      case EventKind::kTopology: {
        std::int64_t rank = ev.integer("rank", 0);
        std::int64_t world = ev.integer("world_size", 1);
        if (world < 1 || rank < 0 || rank >= world || world > INT32_MAX) {
          ev.fail("rank and world_size do not describe a valid topology");
        }
        engine_->set_topology(static_cast<int>(rank), static_cast<int>(world));
        engine_->set_parallel(layout_of(ev, 1));
        break;
      }
      case EventKind::kMemory:
        if (simulated_) update_readings(ev);
        break;
      case EventKind::kTrainSetup:
        clock_->set(ev.number("t"));
        trainer().mark_setup(ev.number("t"));
        break;
      case EventKind::kTrainEnd:
        // The training ended before the engine's finish (Trainer::finish, accelerate's
        // end_training): its final record at that moment. A script without it ends at finish.
        clock_->set(ev.number("t"));
        trainer().finish();
        break;
      case EventKind::kFinish:
        clock_->set(ev.number("t"));
        engine_->shutdown();
        break;
    }
  }

  ~Replayer() {
    if (request_ != nullptr) {
      // A script that ends inside a request: the call never returned, so, as in the reference,
      // nothing is recorded for it.
      Request* request = request_;
      request_ = nullptr;
      core_->requests().abandon(request);
    }
  }

 private:
  internal::TrainerCore& trainer() {
    if (!trainer_) {
      trainer_ = &internal::core_of(engine_->trainer());
      if (device_ >= 0) trainer_->set_device(device_, nullptr);
    }
    return *trainer_;
  }

  // The device readings an event carries (request_end, memory) become the simulated device's;
  // a reading the event does not carry stays as it was.
  void update_readings(const Event& ev) {
    DeviceReadings readings = simulated_->peak_memory(device_).value_or(DeviceReadings{});
    ev.read(readings);
    simulated_->set_readings(readings);
  }

  void stage(const Event& ev) {
    std::string name = ev.string("name");
    if (name.empty()) ev.fail("a stage event needs a \"name\"");
    double t0 = ev.number("t0");
    double t1 = ev.number("t1");
    if (request_ == nullptr) return;  // outside any request: not measured
    std::uint32_t id = vxperf::stage(name).value;
    std::int64_t tokens = ev.integer("tokens", 0);
    std::int64_t batch = ev.integer("batch", 1);
    request_->note_stage(id, tokens, batch);
    EventId e0 = kNoEvent;
    EventId e1 = kNoEvent;
    if (auto ms = ev.optional_number("device_ms"); ms && simulated_) {
      e0 = simulated_->add_event(0.0);
      e1 = simulated_->add_event(*ms);
    }
    if (auto dtype = call_dtype(ev)) request_->note_dtype(id, *dtype);
    Request::Pair pair{id, t0, t1, e0, e1, fraction(ev)};
    pair.attn_fraction = attn_fraction(ev);
    pair.tokens = tokens > 0 ? tokens : 0;  // each call priced at its own count, as it was live
    pair.batch = batch >= 0 ? batch : 1;  // zero rows cost nothing, as live
    request_->pairs.push_back(pair);
  }

  // A pair whose events complete once `ready_after` more steps have closed after its own.
  std::pair<Marker, Marker> train_pair(const Event& ev) {
    internal::TrainerCore& t = trainer();
    double t0 = ev.number("t0");
    double t1 = ev.number("t1");
    clock_->set(t0);
    auto ms = ev.optional_number("device_ms");
    if (!ms || !simulated_) return {Marker{t0, kNoEvent}, Marker{t1, kNoEvent}};
    std::int64_t ready_step = t.current_step_index() + 1 + ev.integer("ready_after", 0);
    internal::TrainerCore* trainer = &t;
    auto ready = [trainer, ready_step] { return trainer->steps_closed() >= ready_step; };
    EventId e0 = simulated_->add_event(0.0, ready);
    EventId e1 = simulated_->add_event(*ms, ready);
    return {Marker{t0, e0}, Marker{t1, e1}};
  }

  void phase(const Event& ev) {
    std::string name = ev.string("name");
    auto phase = phase_from_name(name);
    if (!phase || !scripted(*phase)) {
      ev.fail("phase \"" + name + "\" is not one of " + scripted_phases());
    }
    internal::TrainerCore& t = trainer();
    auto [start, end] = train_pair(ev);
    if (*phase == Phase::kBackward) {
      t.begin_backward(start.host_s);
      clock_->set(end.host_s);
      t.end_backward(start, end);
      return;
    }
    t.begin_model_call(start.host_s);
    clock_->set(end.host_s);
    std::int64_t tokens = *phase == Phase::kForward ? ev.integer("tokens", 0) : 0;
    std::optional<Dtype> dtype = *phase == Phase::kForward ? call_dtype(ev) : std::nullopt;
    t.end_model_call(*phase, start, end, tokens, ev.integer("samples", 1), fraction(ev), dtype,
                     attn_fraction(ev));
  }

  // A call phase's event: the step-bounding one (the optimizer step) with its owner and sync, any
  // other by the one generic path.
  void call(const Event& ev, Phase phase) {
    internal::TrainerCore& t = trainer();
    auto [start, end] = train_pair(ev);
    clock_->set(end.host_s);
    if (phase_info(phase).bounds_step) {
      const std::string& owner = *owners_.insert(ev.string("owner", "opt")).first;
      t.add_optimizer_step(start, end, &owner, ev.boolean("sync", true));
    } else {
      std::int64_t bytes = ev.integer("bytes", -1);
      if (bytes < -1) ev.fail("\"bytes\" must be a count");
      std::int64_t resume = ev.integer("resume_step", -1);
      if (resume < -1) ev.fail("\"resume_step\" must be a step");
      t.add_call(phase, start, end, bytes, {}, resume);
    }
  }

  const LogFn& log_;
  RecordSink& records_;
  const ReplayOptions& options_;
  std::shared_ptr<ManualClock> clock_;
  std::shared_ptr<SimulatedBackend> simulated_;
  std::unique_ptr<Engine> engine_;
  internal::EngineCore* core_ = nullptr;
  int device_ = -1;
  Request* request_ = nullptr;
  int nested_ = 0;
  internal::TrainerCore* trainer_ = nullptr;
  std::set<std::string> owners_;
};

}  // namespace

void replay(std::istream& script, const LogFn& log, RecordSink& records,
            const ReplayOptions& options) {
  Replayer replayer(log, records, options);
  bool configured = false;
  int line = internal::read_script(
      script,
      [&](const Event& ev) {
        if (!configured) {
          replayer.config(ev);
          configured = true;
        } else {
          replayer.event(ev);
        }
      },
      [&](int torn) {
        std::string warning =
            "line " + std::to_string(torn) + ": torn last line skipped (not complete JSON)";
        if (options.warn) {
          options.warn(warning);
        } else {
          log("vxperf: warning: " + warning);
        }
      });
  if (!configured) throw ScriptError(line, "the script is empty: it needs a config event first");
}

}  // namespace vxperf
