#include "vxperf/inference.h"

#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "request.h"
#include "vxperf/engine.h"

namespace vxperf {
namespace {

struct StageRegistry {
  std::mutex mu;
  std::deque<std::string> names;  // a deque keeps references stable as it grows
  std::deque<bool> transformer;
  std::unordered_map<std::string, std::uint32_t> ids;

  StageRegistry() {
    for (const char* name :
         {"transformer", "transformer_2", "text_encoder", "vae_enc", "vae_dec"}) {
      add(name);
    }
  }
  std::uint32_t add(std::string_view name) {
    auto id = static_cast<std::uint32_t>(names.size());
    names.emplace_back(name);
    transformer.push_back(name.rfind("transformer", 0) == 0);
    ids.emplace(names.back(), id);
    return id;
  }
};

StageRegistry& registry() {
  static StageRegistry* instance = new StageRegistry();  // never destroyed: usable at exit
  return *instance;
}

}  // namespace

StageId stage(std::string_view name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.ids.find(std::string(name));
  if (it != r.ids.end()) return StageId{it->second};
  return StageId{r.add(name)};
}

const std::string& stage_name(StageId id) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  static const std::string unknown = "?";
  return id.value < r.names.size() ? r.names[id.value] : unknown;
}

bool is_transformer_stage(std::uint32_t id) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return id < r.transformer.size() && r.transformer[id];
}

void Request::note_stage(std::uint32_t id, std::int64_t tokens, std::int64_t batch) {
  if (id >= stages.size()) stages.resize(id + 1);
  StageState& s = stages[id];
  if (!s.seen) {
    s.seen = true;
    order.push_back(id);
  }
  if (s.tokens == 0 && tokens > 0 && is_transformer_stage(id)) {
    s.tokens = tokens;
    s.batch = batch;
  }
}

void Request::clear() {
  pairs.clear();
  for (std::uint32_t id : order) stages[id] = StageState{};
  order.clear();
}

RequestScope::RequestScope(const RequestOptions& options) noexcept {
  if (Engine* e = engine()) open(*e, options);
}

RequestScope::RequestScope(Engine& engine, const RequestOptions& options) noexcept {
  open(engine, options);
}

void RequestScope::open(Engine& engine, const RequestOptions& options) noexcept {
  // A pipeline called from inside another (an upsampler, a refiner): the outer request owns it.
  if (detail::current_request != nullptr) return;
  try {
    request_ = engine.begin_request(options.device, options.stream);
  } catch (...) {
    request_ = nullptr;  // measurement never takes a run down
  }
  detail::current_request = request_;
}

RequestScope::~RequestScope() {
  if (request_ == nullptr) return;
  // Released first, so that even a failing settle cannot leave the thread inside a dead request.
  detail::current_request = nullptr;
  try {
    request_->engine->end_request(request_);
  } catch (...) {
  }
}

void StageScope::open(StageId stage, std::int64_t tokens, std::int64_t batch,
                      void* stream) noexcept {
  Request* r = detail::current_request;
  request_ = r;
  stage_ = stage.value;
  stream_ = stream != nullptr ? stream : r->stream;
  r->note_stage(stage_, tokens, batch);
  t0_ = r->clock->now_s();
  e0_ = r->device_events ? r->backend->record(r->device, stream_) : kNoEvent;
}

void StageScope::close() noexcept {
  Request* r = request_;
  EventId e1 = r->device_events ? r->backend->record(r->device, stream_) : kNoEvent;
  double t1 = r->clock->now_s();
  r->pairs.push_back(Request::Pair{stage_, t0_, t1, e0_, e1});
}

}  // namespace vxperf
