#include "inference/requests.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <exception>
#include <memory>

#include "base/resolve.h"
#include "base/stats.h"
#include "base/strings.h"
#include "pricing/pricing.h"
#include "runtime/fork_guard.h"

namespace vxperf::internal {
namespace {

double wall_clock_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Requests are reused per thread: a serving loop allocates nothing per request once warm.
thread_local std::unique_ptr<Request> spare_request;

// In a forked child only the forking thread exists. A request it had open is dropped at its end
// without a device call (the child has no device context) and without a record.
void forget_request_in_child() {
  if (Request* r = current_request) {
    r->device_events = false;
    current_request = nullptr;
  }
}

Span request_span(const Request& r) {
  Span s;
  s.kind = SpanKind::kRequest;
  s.name = "request";
  s.device = r.device;
  s.index = r.index;
  return s;
}

}  // namespace

Requests::Requests(Context& context) : ctx_(context) {
  add_fork_hooks(kForkRankRequests, ForkHooks{nullptr, nullptr, &forget_request_in_child});
}

DeclaredModel Requests::declared(std::string_view stage, const ModelInfo& info) const {
  DeclaredModel model;
  model.stage = valid_utf8(stage);  // as stage() interns it
  model.priced = priced_model(info, ctx_.settings());
  model.declared = info;
  return model;
}

void Requests::declare_model(Request& request, std::string_view stage, const ModelInfo& info) {
  if (ctx_.forked()) return;
  DeclaredModel model = declared(stage, info);
  request.own_models = true;
  auto it = std::find_if(request.models.begin(), request.models.end(),
                         [&](const DeclaredModel& m) { return m.stage == model.stage; });
  if (it != request.models.end()) {
    *it = std::move(model);
  } else {
    request.models.push_back(std::move(model));
  }
}

void Requests::declare_model(std::string_view stage, const ModelInfo& info) {
  if (ctx_.forked()) return;  // the trace is the parent's
  DeclaredModel model = declared(stage, info);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(models_.begin(), models_.end(),
                           [&](const DeclaredModel& m) { return m.stage == model.stage; });
    if (it != models_.end()) {
      *it = model;
    } else {
      models_.push_back(model);
    }
  }
  notify(ctx_.observers(), [&](Observer& o) { o.on_model(model.stage, info); });
}

Request* Requests::begin(const RequestOptions& options) {
  if (ctx_.forked()) {
    say_off_in_forked_child();
    return nullptr;
  }
  const int device = options.device;
  std::unique_ptr<Request> request = std::move(spare_request);
  if (!request) request = std::make_unique<Request>();
  DeviceBackend& backend = ctx_.backend_for(device);
  {
    std::lock_guard<std::mutex> lock(mu_);
    request->index = next_request_++;
  }
  change_load(+1, options.from_queue ? -1 : 0);
  request->owner = this;
  request->clock = &ctx_.clock();
  request->observers = ctx_.observers();
  request->backend = &backend;
  request->device_events = device >= 0 && backend.available();
  request->device = request->device_events ? device : -1;
  request->stream = options.stream;
  request->own_models = options.own_models;
  request->videos = std::max<std::int64_t>(options.videos, 1);
  request->denoising_steps = std::max<std::int64_t>(options.denoising_steps, 0);
  request->queue_s = std::isfinite(options.queue_s) && options.queue_s >= 0 ? options.queue_s : -1;
  const double fps = options.fps > 0 ? options.fps : ctx_.settings().fps.value_or(0);
  const bool video = options.frames > 0 && std::isfinite(fps) && fps > 0;
  request->frames = video ? options.frames : 0;
  request->fps = video ? fps : 0;
  request->warmup = request->index < ctx_.settings().warmup;
  // Before the clock is read, so that the profiler's start and the meters' readings stay outside
  // the request.
  ctx_.capture_begins(Settings::CaptureRange::Kind::kRequests, request->index, backend,
                      request->device);
  if (request->device_events) request->meter = ctx_.begin_metering(backend, request->device);
  notify(request->observers, [&](Observer& o) { o.on_begin(request_span(*request)); });
  request->t0 = request->clock->now_s();
  if (request->device_events) Context::start_readings(backend, request->device);
  return request.release();
}

void Requests::note_queued(std::int64_t delta) { change_load(0, delta); }

void Requests::change_load(std::int64_t in_flight, std::int64_t queued) {
  std::lock_guard<std::mutex> lock(load_mu_);
  load_.rank = ctx_.topology().rank;
  load_.in_flight = std::max<std::int64_t>(load_.in_flight + in_flight, 0);
  load_.queued = std::max<std::int64_t>(load_.queued + queued, 0);
  ctx_.emit(load_);
}

void Requests::end(Request* raw, bool failed) {
  if (!ctx_.forked()) change_load(-1, 0);
  std::unique_ptr<Request> request(raw);
  if (ctx_.forked()) {
    // Opened in the parent, ended in a forked child: dropped, no device call, no record.
    request->clear();
    spare_request = std::move(request);
    return;
  }
  // Before the clock is read: a pipeline returns once its last kernel is queued, so without it
  // the request would time submission, not work. The only synchronize of inference, on the
  // request's own device.
  if (request->device_events) request->backend->synchronize(request->device);
  double t_end = request->clock->now_s();
  // The meters read at once: the request's interval is its own, whatever settling costs.
  ctx_.end_metering(request->meter, request->metered);
  if (request->observers != nullptr) {
    Span span = request_span(*request);
    span.t0 = request->t0;
    span.t1 = t_end;
    notify(request->observers, [&](Observer& o) { o.on_end(span); });
  }
  std::int64_t index = request->index;
  DeviceBackend& backend = *request->backend;
  int device = request->device;
  settle(*request, t_end, failed);
  request->clear();
  spare_request = std::move(request);
  ctx_.capture_ends(Settings::CaptureRange::Kind::kRequests, index, backend, device);
}

void Requests::abandon(Request* raw) {
  std::unique_ptr<Request> request(raw);
  if (!ctx_.forked()) {
    change_load(-1, 0);
    ctx_.cancel_metering(request->meter);
    ctx_.capture_ends(Settings::CaptureRange::Kind::kRequests, request->index, *request->backend,
                      request->device);
    for (const auto& p : request->pairs) {
      if (p.e0 != kNoEvent) request->backend->release(p.e0);
      if (p.e1 != kNoEvent) request->backend->release(p.e1);
    }
  }
  request->clear();
  spare_request = std::move(request);
}

void Requests::settle(Request& request, double t_end, bool failed) {
  DeviceBackend& backend = *request.backend;
  // Every call resolved to the larger of its host and device time, grouped by stage.
  std::vector<std::vector<double>> values(request.order.size());  // by slot
  std::vector<std::vector<double>> starts(request.order.size());  // host, from the request's t0
  std::vector<double> device_ms(request.pairs.size(), -1.0);
  // Per stage (by slot): its calls by length and batch, each group's full forwards (the sum of
  // its calls' fractions), and the calls skipped outright.
  std::vector<std::vector<CallGroup>> groups(request.order.size());
  std::vector<std::int64_t> skipped(request.order.size(), 0);
  std::vector<bool> partial(request.order.size(), false);
  // A call that opened without a count takes its stage's first known one (with its batch).
  std::vector<const Request::Pair*> first_known(request.order.size(), nullptr);
  for (const auto& p : request.pairs) {
    std::uint32_t slot = request.stages[p.stage].slot;
    if (p.tokens > 0 && first_known[slot] == nullptr) first_known[slot] = &p;
  }
  for (std::size_t i = 0; i < request.pairs.size(); ++i) {
    const auto& p = request.pairs[i];
    Resolved r = resolve_call(backend, p.t0, p.t1, p.e0, p.e1);
    if (r.device_ms) device_ms[i] = *r.device_ms;
    if (p.e0 != kNoEvent) backend.release(p.e0);
    if (p.e1 != kNoEvent) backend.release(p.e1);
    std::uint32_t slot = request.stages[p.stage].slot;
    values[slot].push_back(r.ms);
    starts[slot].push_back(p.t0 - request.t0);
    const Request::Pair* shape = p.tokens > 0 ? &p : first_known[slot];
    std::int64_t tokens = shape != nullptr ? shape->tokens : 0;
    std::int64_t batch = shape != nullptr ? shape->batch : 1;
    std::vector<CallGroup>& mine = groups[slot];
    auto group = std::find_if(mine.begin(), mine.end(), [&](const CallGroup& g) {
      return g.tokens == tokens && g.batch == batch;
    });
    if (group == mine.end()) group = mine.insert(mine.end(), CallGroup{tokens, batch, 0, 0.0, 0.0});
    ++group->calls;
    group->effective += p.fraction;
    const double attention = p.attn_fraction >= 0 ? p.attn_fraction : p.fraction;
    group->attn_effective += attention;
    if (p.fraction == 0.0) ++skipped[slot];
    if (p.fraction != 1.0 || attention != 1.0 || mine.size() > 1) partial[slot] = true;
  }

  RequestRecord record;
  RequestDetail detail;
  detail.failed = failed;
  record.ts = wall_clock_s();
  detail.start_ts = record.ts - (request.clock->now_s() - request.t0);
  Topology topo = ctx_.topology();
  record.rank = topo.rank;
  record.world_size = topo.world_size;
  ctx_.stamp_run(record, topo);
  record.req = request.index;
  record.warmup = request.warmup;
  record.e2e_s = t_end - request.t0;
  std::vector<double> transformer_ms;
  for (std::size_t slot = 0; slot < request.order.size(); ++slot) {
    std::uint32_t id = request.order[slot];
    std::vector<double>& v = values[slot];
    if (v.empty()) continue;
    StageSummary s;
    s.name = stage_name(StageId{id});
    s.count = static_cast<std::int64_t>(v.size());
    s.total_ms = plain_sum(v);
    s.mean_ms = fmean(v);
    s.std_ms = stdev(v);
    s.min_ms = *std::min_element(v.begin(), v.end());
    s.max_ms = *std::max_element(v.begin(), v.end());
    if (is_transformer_stage(id)) transformer_ms.insert(transformer_ms.end(), v.begin(), v.end());
    record.stages.push_back(std::move(s));
    detail.stage_calls_ms.push_back(std::move(v));
    detail.stage_calls_start_s.push_back(std::move(starts[slot]));
  }

  std::vector<DeclaredModel> engine_models;
  if (!request.own_models) {
    std::lock_guard<std::mutex> lock(mu_);
    engine_models = models_;
  }
  const std::vector<DeclaredModel>& models = request.own_models ? request.models : engine_models;
  std::vector<PricedStage> priced;
  priced.reserve(models.size());
  for (const DeclaredModel& m : models) {
    PricedStage p;
    static_cast<ModelInfo&>(p) = m.priced;
    std::uint32_t id = stage(m.stage).value;
    auto summary = std::find_if(record.stages.begin(), record.stages.end(),
                                [&](const StageSummary& s) { return s.name == m.stage; });
    if (id < request.stages.size() && summary != record.stages.end()) {
      std::uint32_t slot = request.stages[id].slot;
      p.called = true;
      p.tokens = first_known[slot] != nullptr ? first_known[slot]->tokens : 0;
      p.batch = first_known[slot] != nullptr ? first_known[slot]->batch : 1;
      // What autocast ran the calls in beats what the parameters are stored in.
      if (request.stages[id].dtype) p.dtype = request.stages[id].dtype;
      p.calls = summary->count;
      p.total_ms = summary->total_ms;
      if (partial[slot]) {
        p.groups = groups[slot];
        p.skipped_calls = skipped[slot];
      }
    }
    priced.push_back(std::move(p));
  }
  std::optional<int> device =
      request.device_events ? std::optional<int>(request.device) : std::nullopt;
  // The ranks that computed this request together: their peak is its peak.
  ParallelLayout layout = parallel_layout(topo);
  record.dit = price_request(priced, layout.group, ctx_.settings().dtype,
                             [&](Dtype dtype) { return ctx_.peak(device, dtype); });
  if (request.device_events) {
    record.device = request.device;
    record.readings = Context::read_readings(backend, request.device);
    Context::add_meter_readings(*record.readings, request.metered);
  }
  if (request.videos != 1) {
    record.videos = request.videos;
    if (record.readings && record.readings->energy_j) {
      record.energy_j_per_video = *record.readings->energy_j / static_cast<double>(request.videos);
    }
  }
  if (request.queue_s >= 0) record.queue_s = request.queue_s;
  // The first denoising step done: the earliest end of a priced stage's call.
  for (const Request::Pair& p : request.pairs) {
    if (!request.stages[p.stage].priced) continue;
    const double first = p.t1 - request.t0;
    if (!record.first_step_s || first < *record.first_step_s) record.first_step_s = first;
  }
  if (request.denoising_steps > 0) record.denoising_steps = request.denoising_steps;
  if (request.frames > 0) {
    record.video_s = static_cast<double>(request.frames) / request.fps;
    record.realtime_factor = record.e2e_s / *record.video_s;
  }
  record.parallel = Context::record_layout(topo);
  if (request.observers != nullptr) {
    SettledRequest settled;
    settled.index = request.index;
    settled.device = request.device;
    settled.t0 = request.t0;
    settled.t1 = t_end;
    settled.failed = failed;
    settled.videos = request.videos;
    settled.denoising_steps = request.denoising_steps;
    settled.queue_s = request.queue_s;
    settled.frames = request.frames;
    settled.fps = request.fps;
    settled.readings = record.readings;
    // A request priced by its own models carries them, so that its replay prices it the same.
    for (const DeclaredModel& m : request.models) settled.models.emplace_back(m.stage, m.declared);
    settled.calls.reserve(request.pairs.size());
    for (std::size_t i = 0; i < request.pairs.size(); ++i) {
      const auto& p = request.pairs[i];
      const auto& st = request.stages[p.stage];
      SettledCall call;
      call.stage = stage_name(StageId{p.stage});
      call.t0 = p.t0;
      call.t1 = p.t1;
      if (device_ms[i] >= 0) call.device_ms = device_ms[i];
      // Each call's own count, as it was priced (a replay prices it the same).
      const Request::Pair* shape = p.tokens > 0 ? &p : first_known[st.slot];
      call.tokens = shape != nullptr ? shape->tokens : 0;
      call.batch = shape != nullptr ? shape->batch : 1;
      call.dtype = st.dtype;
      call.fraction = p.fraction;
      call.attn_fraction = p.attn_fraction;
      settled.calls.push_back(call);
    }
    notify(request.observers, [&](Observer& o) { o.on_request(settled); });
  }

  ctx_.emit(record, detail);
  std::lock_guard<std::mutex> lock(mu_);
  summary_.add(record.warmup, record.e2e_s, transformer_ms);
}

std::optional<InferenceSummaryLine> Requests::take_summary() {
  // Asked before mu_ is taken: the engine's lock is never taken under it.
  const int rank = ctx_.topology().rank;
  const bool log = ctx_.should_log();
  std::lock_guard<std::mutex> lock(mu_);
  if (summary_done_) return std::nullopt;
  std::optional<InferenceSummaryLine> line = summary_.line(rank);
  if (!line || !log) return std::nullopt;
  summary_done_ = true;
  return line;
}

// ---- this thread's request ----------------------------------------------------------------------

Request* open_request(Requests& requests, const RequestOptions& options) noexcept {
  // A pipeline called from inside another (an upsampler, a refiner): the outer request owns it.
  if (current_request != nullptr) return nullptr;
  Request* request = nullptr;
  try {
    request = requests.begin(options);
  } catch (...) {
    request = nullptr;  // measurement never takes a run down
  }
  current_request = request;
  return request;
}

void close_request(Request* request, bool failed) noexcept {
  // Released first, so that even a failing settle cannot leave the thread inside a dead request.
  current_request = nullptr;
  try {
    request->owner->end(request, failed);
  } catch (...) {
  }
}

}  // namespace vxperf::internal
