#include "trace/trace_events.h"

#include <atomic>

#include "schema/event_kinds.h"
#include "schema/json_visitor.h"
#include "schema/record_fields.h"
#include "schema/record_writer.h"

namespace vxperf::internal {
namespace {

// Names are interned as valid UTF-8; this only keeps a stray byte from throwing.
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// An event's head followed by the fields of `value`'s table (src/schema/record_fields.h).
template <class T, class... Args>
Json with_fields(Json head, const T& value, Args... args) {
  JsonVisitor out(std::move(head));
  Writer writer(out);
  describe(writer, value, args...);
  return std::move(out.json());
}

}  // namespace

std::string config_event(const Settings& settings, const std::optional<std::string>& device_name,
                         int device_index, const Topology& topology,
                         std::optional<double> process_start) {
  Json env = Json::object();
  for (const auto& [name, value] : settings.to_env()) env[name] = value;
  Json config = {{"ev", event_name(EventKind::kConfig)},
                 {"env", env},
                 {"device", device_name ? Json(*device_name) : Json(nullptr)},
                 {"device_index", device_name ? device_index : 0},
                 {"rank", topology.rank},
                 {"world_size", topology.world_size},
                 {"sp", topology.sp}};
  // Beyond format v1: the layout the front end read, so that a replay prices as the run did.
  config["parallel"] = with_fields(Json::object(), parallel_spec(topology));
  if (topology.attempt) config["attempt"] = *topology.attempt;
  if (process_start) config["process_start"] = *process_start;
  return dump(config);
}

Json point_event(std::string_view event, double t) { return {{"ev", event}, {"t", t}}; }

std::string topology_event(const Topology& topology) {
  Json ev = {{"ev", event_name(EventKind::kTopology)}, {"rank", topology.rank}, {"world_size", topology.world_size}};
  ev["parallel"] = with_fields(Json::object(), parallel_spec(topology));
  return dump(ev);
}

std::string model_event(std::string_view stage, const ModelInfo& info) {
  return dump(with_fields(Json{{"ev", event_name(EventKind::kModel)}, {"stage", stage}}, info, /*training=*/false));
}

std::vector<std::string> request_events(const SettledRequest& request) {
  std::vector<std::string> block;
  for (const auto& [stage, info] : request.models) block.push_back(model_event(stage, info));
  // The thread that ran it (settling runs on the request's own thread): `vxperf trace` gives each
  // thread its own track, where its requests and their stages nest.
  static std::atomic<int> next_thread{0};
  thread_local const int thread = next_thread.fetch_add(1, std::memory_order_relaxed);
  Json begin = {{"ev", event_name(EventKind::kRequestBegin)}, {"t", request.t0}, {"thread", thread}};
  if (request.videos != 1) begin["videos"] = request.videos;
  if (request.denoising_steps > 0) begin["denoising_steps"] = request.denoising_steps;
  if (request.queue_s >= 0) begin["queue_s"] = request.queue_s;
  if (request.frames > 0) {
    begin["frames"] = request.frames;
    begin["fps"] = request.fps;
  }
  block.push_back(begin.dump());
  for (const SettledCall& call : request.calls) {
    Json ev = {{"ev", event_name(EventKind::kStage)},
               {"name", call.stage},
               {"t0", call.t0},
               {"t1", call.t1},
               {"device_ms", call.device_ms ? Json(*call.device_ms) : Json(nullptr)}};
    if (call.tokens > 0) {
      ev["tokens"] = call.tokens;
      ev["batch"] = call.batch;
    }
    if (call.dtype) ev["dtype"] = dtype_name(*call.dtype);
    if (call.fraction != 1.0) ev["frac"] = call.fraction;
    if (call.attn_fraction >= 0) ev["afrac"] = call.attn_fraction;
    block.push_back(dump(ev));
  }
  Json end = {{"ev", event_name(EventKind::kRequestEnd)}, {"t", request.t1}};
  if (request.readings) end = with_fields(std::move(end), *request.readings);
  block.push_back(end.dump());
  return block;
}

std::string finish_event(double t) { return Json{{"ev", event_name(EventKind::kFinish)}, {"t", t}}.dump(); }

std::string peak_event(int device, const MeasuredPeak& peak) {
  return Json{{"ev", event_name(EventKind::kPeak)},
              {"device_index", device < 0 ? -1 : device},
              {"dtype", dtype_name(peak.dtype)},
              {"tflops", peak.tflops}}
      .dump();
}

Json train_model_event(const ModelInfo& info, std::int64_t trainable) {
  ModelInfo trained = info;
  trained.trainable = trainable;
  return with_fields(Json{{"ev", event_name(EventKind::kTrainModel)}}, trained, /*training=*/true);
}

Json micro_event(const char* kind, double t) { return Json{{"ev", kind}, {"t", t}}; }

Json memory_event(const DeviceReadings& readings) {
  return with_fields(Json{{"ev", event_name(EventKind::kMemory)}}, readings);
}

}  // namespace vxperf::internal
