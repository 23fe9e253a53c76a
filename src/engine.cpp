#include "vxperf/engine.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "request.h"
#include "stats.h"
#include "trace_writer.h"
#include "vxperf/cuda_backend.h"
#include "vxperf/inference.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using Json = nlohmann::ordered_json;

double wall_clock_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Requests are reused per thread: a serving loop allocates nothing per request once warm.
thread_local std::unique_ptr<Request> spare_request;

Json widths_json(const std::optional<AttentionWidths>& w) {
  if (!w) return nullptr;
  return Json{{"self", w->self}, {"cross", w->cross}, {"modules", w->modules}};
}

}  // namespace

Topology topology_from_env(const EnvLookup& env, std::vector<std::string>* problems) {
  // The launchers' conventions, most common first.
  static const char* const kPairs[][2] = {{"RANK", "WORLD_SIZE"},
                                          {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"}};
  Topology t;
  for (const auto& names : kPairs) {
    auto rank_text = env(names[0]);
    auto world_text = env(names[1]);
    if (!rank_text && !world_text) continue;
    auto rank = rank_text ? parse_int(*rank_text) : std::optional<std::int64_t>(0);
    auto world = world_text ? parse_int(*world_text) : std::optional<std::int64_t>(1);
    if (!rank || !world || *rank < 0 || *world < 1 || *rank >= *world) {
      if (problems != nullptr) {
        problems->push_back(std::string("vxperf: ") + names[0] + "=\"" + rank_text.value_or("") +
                            "\" " + names[1] + "=\"" + world_text.value_or("") +
                            "\" is not a valid rank and world size; using rank 0 of 1");
      }
      return t;
    }
    t.rank = static_cast<int>(*rank);
    t.world_size = static_cast<int>(*world);
    return t;
  }
  return t;
}

Engine::Engine(EngineParts parts)
    : settings_(std::move(parts.settings)),
      clock_(parts.clock ? std::move(parts.clock) : std::make_shared<SteadyClock>()),
      device_(parts.device ? std::move(parts.device) : std::make_shared<HostOnlyBackend>()),
      output_(parts.output ? std::move(parts.output)
                           : std::make_shared<StandardOutput>(settings_.json_path)),
      topology_(parts.topology) {
  cuda_on_demand_ = parts.cuda_on_demand && !parts.device;
  if (settings_.sp > 0) topology_.sp = settings_.sp;
  if (!settings_.trace_path.empty()) trace_ = std::make_unique<TraceWriter>(settings_.trace_path);
}

Engine::~Engine() = default;

void Engine::set_device_backend(std::shared_ptr<DeviceBackend> device) {
  std::lock_guard<std::mutex> lock(mu_);
  // The old backend stays alive: a request opened before the switch still holds it.
  retired_.push_back(device_);
  device_ = device ? std::move(device) : std::make_shared<HostOnlyBackend>();
}

std::shared_ptr<DeviceBackend> Engine::backend_for(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (device >= 0 && cuda_on_demand_) {
    cuda_on_demand_ = false;  // one try: an absent driver is said once, then host-only
    CudaOptions options;
    options.notice = [this](std::string_view line) { output_->log(line); };
    if (auto cuda = make_cuda_backend(options)) {
      retired_.push_back(device_);
      device_ = std::move(cuda);
    }
  }
  return device_;
}

Topology Engine::topology() const {
  std::lock_guard<std::mutex> lock(mu_);
  return topology_;
}

void Engine::set_topology(int rank, int world_size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (world_size < 1 || rank < 0 || rank >= world_size) return;
  topology_.rank = rank;
  topology_.world_size = world_size;
}

void Engine::set_sequence_parallel(int sp) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sp >= 1) topology_.sp = sp;
}

std::string Engine::tag() const { return log_tag(topology().rank); }

bool Engine::should_log() const { return settings_.log_all_ranks || topology().rank == 0; }

int Engine::dp_degree() const {
  Topology t = topology();
  return std::max(1, t.world_size / std::max(1, t.sp));
}

void Engine::notice(std::string_view message) { output_->log(message); }

void Engine::declare_model(std::string_view stage, const ModelInfo& info) {
  DeclaredModel model;
  model.stage = std::string(stage);
  model.params = settings_.dit_params != 0 ? settings_.dit_params : info.params;
  model.attention = usable_widths(info.attention, settings_.attn_flops);
  model.text_tokens = model.attention ? info.text_tokens : 0;
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
  if (trace_) {
    Json ev = {{"ev", "model"},
               {"stage", model.stage},
               {"params", info.params},
               {"attn", widths_json(info.attention)},
               {"text_tokens", info.text_tokens}};
    trace_->write(ev.dump());
  }
}

void Engine::ensure_trace_header(int device) {
  if (!trace_ || trace_->has_header()) return;
  Json env = Json::object();
  for (const auto& [name, value] : settings_.to_env()) env[name] = value;
  Topology t = topology();
  std::shared_ptr<DeviceBackend> backend;
  {
    std::lock_guard<std::mutex> lock(mu_);
    backend = device_;
  }
  bool on_device = device >= 0 && backend->available();
  Json config = {{"ev", "config"},
                 {"env", env},
                 {"device", on_device ? Json(backend->device_name(device)) : Json(nullptr)},
                 {"device_index", on_device ? device : 0},
                 {"rank", t.rank},
                 {"world_size", t.world_size},
                 {"sp", t.sp}};
  trace_->write_header(config.dump(), t.rank, t.world_size);
}

Request* Engine::begin_request(int device, void* stream) {
  std::unique_ptr<Request> request = std::move(spare_request);
  if (!request) request = std::make_unique<Request>();
  std::shared_ptr<DeviceBackend> backend = backend_for(device);
  {
    std::lock_guard<std::mutex> lock(mu_);
    request->index = next_request_++;
  }
  request->engine = this;
  request->clock = clock_.get();
  request->backend = backend.get();
  request->device_events = device >= 0 && backend->available();
  request->device = request->device_events ? device : -1;
  request->stream = stream;
  request->warmup = request->index < settings_.warmup;
  request->t0 = clock_->now_s();
  if (request->device_events) backend->reset_peak_memory(request->device);
  return request.release();
}

void Engine::end_request(Request* raw) {
  std::unique_ptr<Request> request(raw);
  // Before the clock is read: a pipeline returns once its last kernel is queued, so without it
  // the request would time submission, not work. The only synchronize of inference, on the
  // request's own device.
  if (request->device_events) request->backend->synchronize(request->device);
  settle(request.get(), clock_->now_s());
  request->clear();
  spare_request = std::move(request);
}

void Engine::settle(Request* request, double t_end) {
  double e2e_s = t_end - request->t0;
  DeviceBackend& backend = *request->backend;
  ensure_trace_header(request->device);
  // Resolve every pair to the larger of host and device time (whichever saw the work).
  std::vector<std::vector<double>> values(request->stages.size());
  std::vector<double> device_ms(request->pairs.size(), -1.0);
  for (std::size_t i = 0; i < request->pairs.size(); ++i) {
    const auto& p = request->pairs[i];
    double host_ms = (p.t1 - p.t0) * 1000.0;
    double ms = host_ms;
    if (p.e0 != kNoEvent && p.e1 != kNoEvent && backend.query(p.e0) && backend.query(p.e1)) {
      if (auto elapsed = backend.elapsed_ms(p.e0, p.e1)) {
        ms = std::max(host_ms, *elapsed);
        device_ms[i] = *elapsed;
      }
    }
    if (p.e0 != kNoEvent) backend.release(p.e0);
    if (p.e1 != kNoEvent) backend.release(p.e1);
    values[p.stage].push_back(ms);
  }

  RequestRecord record;
  record.ts = wall_clock_s();
  Topology topo = topology();
  record.rank = topo.rank;
  record.world_size = topo.world_size;
  record.req = request->index;
  record.warmup = request->warmup;
  record.e2e_s = e2e_s;
  for (std::uint32_t id : request->order) {
    std::vector<double>& v = values[id];
    if (v.empty()) continue;
    StageSummary s;
    s.name = stage_name(StageId{id});
    s.count = static_cast<std::int64_t>(v.size());
    s.total_ms = detail::plain_sum(v);
    s.mean_ms = detail::fmean(v);
    s.std_ms = detail::stdev(v);
    s.min_ms = *std::min_element(v.begin(), v.end());
    s.max_ms = *std::max_element(v.begin(), v.end());
    if (is_transformer_stage(id)) {
      record.step_ms.insert(record.step_ms.end(), v.begin(), v.end());
    }
    s.values_ms = std::move(v);
    record.stages.push_back(std::move(s));
  }
  std::vector<DeclaredModel> models;
  {
    std::lock_guard<std::mutex> lock(mu_);
    models = models_;
  }
  record.dit = dit_throughput(*request, record.stages, models, topo);
  if (request->device_events) {
    record.device = request->device;
    record.peaks = backend.peak_memory(request->device).value_or(MemoryPeaks{});
  }

  if (trace_) {
    std::vector<std::string> block;
    block.push_back(Json{{"ev", "request_begin"}, {"t", request->t0}}.dump());
    for (std::size_t i = 0; i < request->pairs.size(); ++i) {
      const auto& p = request->pairs[i];
      Json ev = {{"ev", "stage"},
                 {"name", stage_name(StageId{p.stage})},
                 {"t0", p.t0},
                 {"t1", p.t1},
                 {"device_ms", device_ms[i] >= 0 ? Json(device_ms[i]) : Json(nullptr)}};
      const auto& st = request->stages[p.stage];
      if (st.tokens > 0) {
        ev["tokens"] = st.tokens;
        ev["batch"] = st.batch;
      }
      block.push_back(ev.dump());
    }
    Json end = {{"ev", "request_end"}, {"t", t_end}};
    if (record.peaks) {
      end["peak_alloc_bytes"] = record.peaks->allocated;
      end["peak_reserved_bytes"] = record.peaks->reserved;
    }
    block.push_back(end.dump());
    trace_->write_block(block);
  }

  std::string tag = log_tag(topo.rank);
  bool log = settings_.log_all_ranks || topo.rank == 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (log) {
    output_->log(format_log_line(record));
    if (settings_.level >= 2) {
      std::vector<const StageSummary*> sorted;
      for (const auto& s : record.stages) sorted.push_back(&s);
      std::sort(sorted.begin(), sorted.end(),
                [](const StageSummary* a, const StageSummary* b) { return a->name < b->name; });
      for (const StageSummary* s : sorted) {
        std::string detail;
        for (std::size_t i = 0; i < s->values_ms.size(); ++i) {
          char buf[64];
          std::snprintf(buf, sizeof buf, "%s%.1f", i ? ", " : "", s->values_ms[i]);
          detail += buf;
        }
        output_->log(tag + " " + s->name + " steps(ms): " + detail);
      }
    }
  }
  output_->record(to_json_line(record), topo.rank, topo.world_size);
  // The exit summary needs only these; the per-call values are dropped to keep history small.
  for (auto& s : record.stages) s.values_ms = {};
  history_.push_back(std::move(record));
}

std::optional<DitThroughput> Engine::dit_throughput(const Request& request,
                                                    const std::vector<StageSummary>& stages,
                                                    const std::vector<DeclaredModel>& models,
                                                    const Topology& topo) {
  double total_flops = 0.0;
  double attn_flops = 0.0;
  double total_ms = 0.0;
  std::int64_t total_count = 0;
  std::int64_t max_tokens = 0;
  std::int64_t max_batch = 0;
  std::int64_t params_sum = 0;
  for (const auto& model : models) {
    if (model.params == 0) continue;  // a model with no parameters prices nothing
    params_sum += model.params;
    std::uint32_t id = stage(model.stage).value;
    auto summary = std::find_if(stages.begin(), stages.end(),
                                [&](const StageSummary& s) { return s.name == model.stage; });
    if (id >= request.stages.size() || summary == stages.end()) continue;
    const auto& st = request.stages[id];
    if (st.tokens == 0) continue;
    double tokens = static_cast<double>(st.tokens);
    double attention =
        attention_flops(model.attention, tokens, static_cast<double>(model.text_tokens));
    double per_forward = 2.0 * static_cast<double>(model.params) * tokens + attention;
    double count = static_cast<double>(summary->count);
    total_flops += per_forward * static_cast<double>(st.batch) * count;
    attn_flops += attention * static_cast<double>(st.batch) * count;
    total_ms += summary->total_ms;
    total_count += summary->count;
    max_tokens = std::max(max_tokens, st.tokens);
    max_batch = std::max(max_batch, st.batch);
  }
  if (total_count == 0 || total_ms <= 0) return std::nullopt;
  DitThroughput d;
  d.params = params_sum;
  d.tokens = max_tokens;
  d.batch = max_batch;
  // A job rate: under sequence parallel each rank is handed the whole length but computes a
  // shard, so the peak it is compared with is that of every device in the group.
  d.devices = topo.world_size;
  d.flops_per_fwd = total_flops / static_cast<double>(total_count);
  d.attn_share = total_flops != 0.0 ? attn_flops / total_flops : 0.0;
  d.tflops = total_flops / (total_ms / 1000.0) / 1e12;
  std::optional<double> per_device =
      peak_tflops(request.device_events ? std::optional<int>(request.device) : std::nullopt);
  if (per_device && *per_device != 0.0) {
    d.peak_tflops = *per_device * d.devices;
    d.mfu = d.tflops / *d.peak_tflops;
  }
  return d;
}

std::optional<double> Engine::peak_tflops(std::optional<int> device) {
  std::optional<std::string> name;
  if (!settings_.peak_tflops && device) {
    std::shared_ptr<DeviceBackend> backend;
    {
      std::lock_guard<std::mutex> lock(mu_);
      backend = device_;
    }
    name = backend->device_name(*device);
  }
  return per_device_peak_tflops(settings_.peak_tflops, name);
}

std::vector<RequestRecord> Engine::history() const {
  std::lock_guard<std::mutex> lock(mu_);
  return history_;
}

Trainer& Engine::trainer() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!trainer_) trainer_ = std::make_unique<Trainer>(*this);
  return *trainer_;
}

Trainer* Engine::existing_trainer() {
  std::lock_guard<std::mutex> lock(mu_);
  return trainer_.get();
}

void Engine::shutdown() {
  Trainer* trainer = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    trainer = trainer_.get();
  }
  if (trainer != nullptr) trainer->finish();
  report_inference_summary();
  if (trace_ && !trace_finished_.exchange(true)) {
    ensure_trace_header(-1);
    trace_->write(Json{{"ev", "finish"}, {"t", clock_->now_s()}}.dump());
  }
}

void Engine::report_inference_summary() {
  std::lock_guard<std::mutex> lock(mu_);
  if (summary_done_) return;
  std::vector<const RequestRecord*> measured;
  for (const auto& r : history_) {
    if (!r.warmup) measured.push_back(&r);
  }
  bool log = settings_.log_all_ranks || topology_.rank == 0;
  if (measured.empty() || !log) return;
  summary_done_ = true;
  std::vector<double> e2e;
  std::vector<double> steps;
  double total = 0.0;
  for (const RequestRecord* r : measured) {
    e2e.push_back(r->e2e_s);
    steps.insert(steps.end(), r->step_ms.begin(), r->step_ms.end());
    total += r->e2e_s;
  }
  std::sort(e2e.begin(), e2e.end());
  char buf[160];
  std::string line = log_tag(topology_.rank) + " === " + std::to_string(measured.size()) + " reqs";
  std::size_t skipped = history_.size() - measured.size();
  if (skipped) line += " (" + std::to_string(skipped) + " warmup excluded)";
  std::snprintf(buf, sizeof buf, " | e2e p50 %.1fs p95 %.1fs", detail::percentile(e2e, 50),
                detail::percentile(e2e, 95));
  line += buf;
  if (!steps.empty()) {
    std::snprintf(buf, sizeof buf, " | transformer mean %.0fms/step", detail::fmean(steps));
    line += buf;
  }
  if (total > 0) {
    std::snprintf(buf, sizeof buf, " | %.1f reqs/hour",
                  static_cast<double>(measured.size()) / total * 3600.0);
    line += buf;
  }
  output_->log(line + " ===");
}

// ---- the process-wide engine
// ---------------------------------------------------------------------

namespace {

void report(const std::vector<std::string>& problems) {
  for (const auto& p : problems) write_line(STDERR_FILENO, p);
}

Engine* create_process_engine() {
  std::vector<std::string> problems;
  Settings settings = Settings::parse(process_env(), &problems);
  if (!settings.enabled()) {
    report(problems);  // only VIDEOX_PERF itself is read when off
    return nullptr;
  }
  EngineParts parts;
  parts.settings = settings;
  parts.topology = topology_from_env(process_env(), &problems);
  parts.cuda_on_demand = true;
  report(problems);
  // Never destroyed: the exit handler and late threads may still use it.
  auto* e = new Engine(std::move(parts));
  std::atexit([] {
    if (Engine* process = engine()) process->shutdown();
  });
  if (e->should_log()) {
    std::string where = settings.json_path.empty() ? "" : "; records to " + settings.json_path;
    if (!settings.trace_path.empty()) where += "; trace to " + settings.trace_path;
    e->notice("vxperf: metrics on (level " + std::to_string(settings.level) + ")" + where);
  }
  return e;
}

}  // namespace

Engine* engine() {
  static Engine* const instance = create_process_engine();
  return instance;
}

bool enabled() { return engine() != nullptr; }

void shutdown() {
  if (Engine* e = engine()) e->shutdown();
}

Trainer* trainer() {
  Engine* e = engine();
  return e != nullptr ? &e->trainer() : nullptr;
}

}  // namespace vxperf
