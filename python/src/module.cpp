// vxperf._ext: the Python extension over the C++ engine.
//
// pybind11 for everything that runs once per request, window or model (configuration, model
// declarations, request boundaries, training measurement points); the per-call paths (timed
// module calls, stage scopes) are the C types of timed_call.cpp. Every engine call goes through
// binding_api: the calls with plain arguments are its table (api::define_calls), what needs
// Python's objects is wrapped here. No LibTorch: Python hands over plain numbers.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "binding_api.h"
#include "block_probe.h"
#include "record_sinks.h"
#include "timed_call.h"
#include "vxperf/observer.h"
#include "vxperf/stages.h"

namespace py = pybind11;
namespace api = vxperf::binding;

namespace {

// Set when the interpreter is shutting down (after the package's exit handler ran): the engine
// must not call back into Python from then on.
std::atomic<bool> python_closing{false};

// Torch profiler ranges: an observer that, while a torch profiler records (`gate()` true), opens
// a range named after each request, stage, step, micro-step and phase (`enter(name, is_stage)`
// returns its token; a stage's name is also declared in the trace as one of vxperf's) and closes
// it at the end (`leave(token)`), so that a Kineto trace shows vxperf's names next to the kernels.
// Python's side (vxperf/_profiler.py) passes torch's own profiler functions. Without a profiler
// recording it costs the gate's call per span; without the observer (metrics off, or torch never
// imported) nothing.
class TorchRanges final : public vxperf::Observer {
 public:
  TorchRanges(py::object gate, py::object enter, py::object leave)
      : gate_(std::move(gate)), enter_(std::move(enter)), leave_(std::move(leave)) {}
  // The Python objects are left to the interpreter at exit (no GIL may be held by then).
  ~TorchRanges() override {
    gate_.release();
    enter_.release();
    leave_.release();
  }

  void on_begin(const vxperf::Span& s) override {
    if (python_closing.load(std::memory_order_relaxed)) return;
    py::gil_scoped_acquire gil;
    PyObject* token = nullptr;
    try {
      if (gate_().cast<bool>()) {
        std::string name(s.name);
        if (s.kind == vxperf::SpanKind::kRequest || s.kind == vxperf::SpanKind::kStep) {
          name += ' ' + std::to_string(s.index);
        }
        token = enter_(name, s.kind == vxperf::SpanKind::kStage).release().ptr();
      }
    } catch (py::error_already_set&) {
      token = nullptr;  // measurement goes on without this range
    }
    stack().push_back(token);
  }

  void on_end(const vxperf::Span&) override {
    if (python_closing.load(std::memory_order_relaxed)) return;
    py::gil_scoped_acquire gil;
    auto& open = stack();
    if (open.empty()) return;
    PyObject* token = open.back();
    open.pop_back();
    if (token == nullptr) return;
    try {
      leave_(py::reinterpret_steal<py::object>(token));
    } catch (py::error_already_set&) {
    }
  }

 private:
  // Per thread, as the spans nest: the token of each open span (nullptr: no range opened).
  static std::vector<PyObject*>& stack() {
    thread_local std::vector<PyObject*> open;
    return open;
  }
  py::object gate_, enter_, leave_;
};

// VIDEOX_PERF_PROFILE's range driving a profiler the program handed over (vxperf.profile_range):
// start() as the range starts, stop() as it stops. What they raise is reported, never re-raised
// into the training loop or request.
class CaptureHook final : public vxperf::Observer {
 public:
  CaptureHook(py::object start, py::object stop)
      : start_(std::move(start)), stop_(std::move(stop)) {}
  ~CaptureHook() override {
    start_.release();
    stop_.release();
  }

  void on_capture(bool start) override {
    if (python_closing.load(std::memory_order_relaxed)) return;
    py::gil_scoped_acquire gil;
    try {
      (start ? start_ : stop_)();
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable(start ? "vxperf: starting the profiler handed to profile_range()"
                                    : "vxperf: stopping the profiler handed to profile_range()");
    }
  }

 private:
  py::object start_, stop_;
};

// fn(args...) as a Tuple; nullopt where it returned None, returned something else, or raised (a
// Python error said as unraisable, `what` naming the call). Call with the GIL held.
template <class Tuple, class... Args>
std::optional<Tuple> tuple_or_none(const py::object& fn, const char* what, Args&&... args) {
  try {
    py::object result = fn(std::forward<Args>(args)...);
    if (result.is_none()) return std::nullopt;
    return result.cast<Tuple>();
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable(what);
    return std::nullopt;
  } catch (const py::cast_error&) {
    return std::nullopt;
  }
}

// The names of the phases `keep` holds for, in the engine's order.
template <class Keep>
py::tuple phase_names(Keep keep) {
  py::list names;
  for (const vxperf::PhaseInfo& info : api::phases()) {
    if (keep(info)) names.append(info.name);
  }
  return py::tuple(names);
}

using Widths = std::optional<std::tuple<std::int64_t, std::int64_t, std::int64_t>>;

// The one model description (vxperf/model.h) from a vxperf._model.Model, read by its fields'
// names. A dtype name the engine does not know leaves the dtype unknown.
vxperf::ModelInfo model_of(const py::handle& model) {
  vxperf::ModelInfo info;
  info.params = model.attr("params").cast<std::int64_t>();
  info.trainable = model.attr("trainable").cast<std::int64_t>();
  info.checkpointing = model.attr("checkpointing").cast<bool>();
  if (auto widths = model.attr("widths").cast<Widths>()) {
    info.attention =
        vxperf::AttentionWidths{std::get<0>(*widths), std::get<1>(*widths), std::get<2>(*widths)};
  }
  info.text_tokens = model.attr("text_tokens").cast<std::int64_t>();
  auto dtype = model.attr("dtype").cast<std::string>();
  if (!dtype.empty()) info.dtype = vxperf::parse_dtype(dtype);
  auto storage = model.attr("storage_dtype").cast<std::string>();
  if (!storage.empty()) info.storage_dtype = vxperf::parse_dtype(storage);
  info.attn_density = model.attr("attn_density").cast<double>();
  return info;
}

bool configure(int level) {
  bool on = api::configure(level);
  vxperf::python::set_stage_scopes_enabled(on);
  return on;
}

// Peak-memory callbacks into Python (torch's allocator counters), as the CUDA backend's provider.
// Called by the engine on the thread of the request or training loop, which may have released
// the GIL.
vxperf::CudaOptions cuda_options(py::object peaks, py::object reset, const std::string& library) {
  vxperf::CudaOptions options;
  options.library_path = library;
  auto keep_peaks = std::make_shared<py::object>(std::move(peaks));
  auto keep_reset = std::make_shared<py::object>(std::move(reset));
  options.memory_peaks = [keep_peaks](int device) -> std::optional<vxperf::DeviceReadings> {
    if (python_closing.load() || !Py_IsInitialized() || keep_peaks->is_none()) return std::nullopt;
    py::gil_scoped_acquire gil;
    try {
      auto pair = tuple_or_none<std::tuple<std::uint64_t, std::uint64_t>>(
          *keep_peaks, "vxperf: reading peak memory", device);
      if (!pair) return std::nullopt;
      vxperf::DeviceReadings readings;
      readings.allocated = std::get<0>(*pair);
      readings.reserved = std::get<1>(*pair);
      return readings;
    } catch (...) {  // nothing may reach the engine's thread
      return std::nullopt;
    }
  };
  options.reset_memory_peaks = [keep_reset](int device) {
    if (python_closing.load() || !Py_IsInitialized() || keep_reset->is_none()) return;
    py::gil_scoped_acquire gil;
    try {
      (*keep_reset)(device);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("vxperf: resetting peak memory");
    } catch (...) {
    }
  };
  return options;
}

// The cross-rank view's all-gather, a Python callable. Called by the engine on the training
// thread, which may or may not hold the GIL (a window can close inside shutdown()).
api::PackedExchange packed_exchange(py::object fn) {
  // Dropped with the GIL held: a copy of the hook may be the last one left on the training thread.
  std::shared_ptr<py::object> keep(new py::object(std::move(fn)), [](py::object* o) {
    if (Py_IsInitialized() && !python_closing.load()) {
      py::gil_scoped_acquire gil;
      delete o;
    }  // else leaked: the interpreter is gone or going
  });
  return [keep](
             const std::vector<double>& mine) -> std::optional<std::vector<std::vector<double>>> {
    if (python_closing.load() || !Py_IsInitialized()) {
      throw std::runtime_error("the interpreter is shutting down");
    }
    py::gil_scoped_acquire gil;
    try {
      py::object result = (*keep)(mine);
      if (result.is_none()) return std::nullopt;
      return result.cast<std::vector<std::vector<double>>>();
    } catch (py::error_already_set& e) {
      // Carried out as a plain exception: this one must not outlive the GIL held here. The
      // message alone: the engine says it on one line.
      std::string message = py::str(e.value());
      if (message.empty()) message = py::str(e.type().attr("__name__"));
      throw std::runtime_error(message);
    } catch (const py::cast_error& e) {
      throw std::runtime_error(std::string("the exchange answered something else: ") + e.what());
    }
  };
}

}  // namespace

PYBIND11_MODULE(_ext, m) {
  m.doc() = "vxperf's C++ engine, as the vxperf package uses it (internal; see vxperf).";

  if (!vxperf::python::add_timed_types(m.ptr())) throw py::error_already_set();
  if (!vxperf::python::add_block_types(m.ptr())) throw py::error_already_set();
  vxperf::python::add_record_functions(m);
  using vxperf::python::deliver_pending;

  // ---- the process-wide engine
  m.def("configure", &configure, py::arg("level"),
        "Makes the engine if needed: level > 0 turns metrics on at that level, 0 reads "
        "VIDEOX_PERF. Returns whether metrics are on.");
  m.def("enabled", [] {
    bool on = api::enabled();
    vxperf::python::set_stage_scopes_enabled(on);
    return on;
  });
  m.def(
      "prometheus_text",
      [] {
        py::gil_scoped_release release;
        return api::prometheus_text();
      },
      "Prometheus exposition text of every record settled since the first call; '' when off.");
  m.def(
      "prometheus_families",
      [] {
        std::vector<vxperf::FamilySnapshot> families;
        {
          py::gil_scoped_release release;
          families = api::prometheus_families();
        }
        py::list out;
        for (const vxperf::FamilySnapshot& f : families) {
          const char* type = f.type == vxperf::MetricType::kCounter ? "counter"
                             : f.type == vxperf::MetricType::kGauge ? "gauge"
                                                                    : "histogram";
          py::list samples;
          for (const vxperf::MetricSample& s : f.samples) {
            samples.append(
                py::make_tuple(s.label_values, s.value, s.cumulative_counts, s.sum, s.count));
          }
          out.append(py::make_tuple(f.name, f.help, type, f.label_names, f.upper_bounds, samples));
        }
        return out;
      },
      "The same metrics as (name, help, type, label_names, upper_bounds, samples) families, each "
      "sample (label_values, value, cumulative_counts, sum, count); [] when off.");
  m.def(
      "shutdown",
      [] {
        {
          py::gil_scoped_release release;
          api::shutdown();
        }
        deliver_pending();
      },
      "Prints the exit summaries now (once).");
  m.def("python_closing", [] { python_closing.store(true); });
  m.def(
      "add_torch_ranges",
      [](py::object gate, py::object enter, py::object leave) {
        return api::add_observer(
            std::make_shared<TorchRanges>(std::move(gate), std::move(enter), std::move(leave)));
      },
      py::arg("gate"), py::arg("enter"), py::arg("leave"),
      "Opens a torch profiler range per request, stage, step and phase while gate() is true: "
      "enter(name, is_stage) opens one, leave(token) closes it.");
  m.def(
      "add_capture_hook",
      [](py::object start, py::object stop) {
        return api::add_observer(std::make_shared<CaptureHook>(std::move(start), std::move(stop)));
      },
      py::arg("start"), py::arg("stop"),
      "Calls start() and stop() as VIDEOX_PERF_PROFILE's range starts and stops.");
  m.def(
      "dtype_names",
      [] {
        std::vector<std::string> names;
        for (const auto& row : vxperf::kDtypes) names.emplace_back(row.name);
        return names;
      },
      "The engine's dtype names, in its table's order.");
  m.def(
      "parse_dtype",
      [](const std::string& text) -> std::optional<std::string> {
        auto dtype = vxperf::parse_dtype(text);
        if (!dtype) return std::nullopt;
        return std::string(vxperf::dtype_name(*dtype));
      },
      py::arg("text"), "The engine's name of a dtype spelling (torch's among them), or None.");
  m.def("topology", [] {
    vxperf::Topology t = api::topology();
    return std::make_tuple(t.rank, t.world_size, t.sp);
  });
  m.def(
      "set_parallel",
      [](int sp, int tp, int dp_shard, int dp_replicate, int group, int dp_rank,
         std::vector<std::pair<std::string, std::string>> from) {
        api::set_parallel(
            vxperf::ParallelSpec{sp, tp, dp_shard, dp_replicate, group, dp_rank, std::move(from)});
      },
      py::arg("sp"), py::arg("tp"), py::arg("dp_shard"), py::arg("dp_replicate"), py::arg("group"),
      py::arg("dp_rank"), py::arg("sources"),
      "The parallel layout as read (0, dp_rank -1: not read) and where each dimension was read.");

  // ---- models and devices
  m.def(
      "declare_model",
      [](const std::string& stage, const py::object& model) {
        api::declare_model(stage, model_of(model));
      },
      py::arg("stage"), py::arg("model"), "Prices the forwards of `stage` by `model` (a Model).");

  // ---- measured peaks
  m.def(
      "calibrate",
      [](const std::string& device, const std::string& dtype, py::object probe,
         bool force) -> py::object {
        // probe() -> (tflops, n, gemms, seconds, by) or None; errors in it mean "no rate".
        auto call = [&probe]() -> std::optional<vxperf::MeasuredPeak> {
          auto t =
              tuple_or_none<std::tuple<double, std::int64_t, std::int64_t, double, std::string>>(
                  probe, "vxperf: the peak probe");
          if (!t) return std::nullopt;
          vxperf::MeasuredPeak p;
          p.tflops = std::get<0>(*t);
          p.n = std::get<1>(*t);
          p.gemms = std::get<2>(*t);
          p.seconds = std::get<3>(*t);
          p.by = std::get<4>(*t);
          return p;
        };
        auto got = api::calibrate(device, dtype, call, force);
        if (!got) return py::none();
        const vxperf::MeasuredPeak& peak = got->peak;
        return py::make_tuple(peak.tflops, peak.n, peak.gemms, peak.seconds, peak.by,
                              got->from_cache);
      },
      py::arg("device"), py::arg("dtype"), py::arg("probe"), py::arg("force") = false,
      "The cached peak of a device (a cache key) in a dtype, else probe()'s, then cached: "
      "(tflops, n, gemms, seconds, by, from_cache) or None.");
  m.def(
      "use_cuda_backend",
      [](py::object peaks, py::object reset, int device, const std::string& library) {
        return api::use_cuda_backend(cuda_options(std::move(peaks), std::move(reset), library),
                                     device);
      },
      py::arg("peaks"), py::arg("reset"), py::arg("device"), py::arg("library") = "");

  // ---- inference
  m.def(
      "stages",
      [] {
        py::list rows;
        for (const vxperf::StageInfo& row : vxperf::kStages) {
          rows.append(py::make_tuple(row.name, vxperf::stage_id(row.stage).value, row.priced,
                                     vxperf::phase_name(row.phase)));
        }
        return py::tuple(rows);
      },
      "The well-known stages as (name, id, priced, phase), in the engine's order (the stage "
      "table).");
  m.def(
      "is_priced_stage", [](const std::string& name) { return vxperf::is_priced_stage(name); },
      py::arg("name"),
      "Whether a stage's calls are priced in FLOPs: the denoising model's calls (one or two a "
      "denoising step).");
  m.def(
      "begin_request",
      [](int device, std::uintptr_t stream, bool own_models, std::int64_t videos, double queue_s,
         std::int64_t frames, double fps, bool from_queue) {
        return reinterpret_cast<std::uintptr_t>(api::begin_request(
            device, stream, own_models, videos, queue_s, frames, fps, from_queue));
      },
      py::arg("device"), py::arg("stream"), py::arg("own_models") = false, py::arg("videos") = 1,
      py::arg("queue_s") = -1.0, py::arg("frames") = 0, py::arg("fps") = 0.0,
      py::arg("from_queue") = false,
      "Opens a request on this thread; 0 when off or nested (the outer request owns it).");
  m.def(
      "end_request",
      [](std::uintptr_t handle, bool failed) {
        // Without the GIL: the request's one device synchronize may take a while.
        {
          py::gil_scoped_release release;
          api::end_request(reinterpret_cast<const void*>(handle), failed);
        }
        deliver_pending();  // the request's record, to add_sink()'s functions
      },
      py::arg("handle"), py::arg("failed") = false);

  // ---- training
  py::class_<vxperf::TrainMark>(m, "TrainMark", "An open training interval (opaque).");
  m.def(
      "phases", [] { return phase_names([](const vxperf::PhaseInfo&) { return true; }); },
      "The training phases' names, in the engine's order (the phase table).");
  m.def(
      "model_phases",
      [] {
        return phase_names([](const vxperf::PhaseInfo& info) {
          return info.source == vxperf::PhaseSource::kModelCall;
        });
      },
      "The phases a model call can be classified into, in the engine's order.");
  m.def(
      "call_phases",
      [] {
        return phase_names(
            [](const vxperf::PhaseInfo& info) { return vxperf::is_plain_call_phase(info.phase); });
      },
      "The phases timed as calls of their own (vxperf.phase()), in the engine's order.");
  m.def(
      "train_register_model",
      [](const py::object& model, bool replace) {
        api::train_register_model(model_of(model), replace);
      },
      py::arg("model"), py::arg("replace"),
      "The trained model (a Model); the largest wins unless `replace`.");
  m.def(
      "train_optimizer_end",
      [](const vxperf::TrainMark& mark, std::uintptr_t owner, bool synced) {
        api::train_optimizer_end(mark, owner, synced);
        deliver_pending();  // windows settled as the step closed
      },
      py::arg("mark"), py::arg("owner"), py::arg("synced"));
  m.def("train_stop_exchanges", [](const std::string& why) {
    {
      py::gil_scoped_release release;
      api::train_stop_exchanges(why);
    }
    deliver_pending();
  });
  m.def("train_finish", [] {
    api::train_finish();
    deliver_pending();
  });

  // ---- the live cross-rank view
  m.def(
      "set_rank_exchange",
      [](py::object fn) { api::set_rank_exchange(packed_exchange(std::move(fn))); }, py::arg("fn"),
      "fn(mine: list[float]) -> list[list[float]] | None: every rank's numbers, at window ends.");

  // The plain calls, after the types they name (their signatures say TrainMark).
  api::define_calls(m);
}
