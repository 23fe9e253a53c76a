// Stage names, interned once so that the hot path carries a small integer, never a string.
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/fork_safety.h"
#include "core/request.h"
#include "format/strings.h"
#include "vxperf/inference.h"

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
  static StageRegistry* instance = [] {
    detail::install_fork_handlers();  // a child must not inherit this lock held
    return new StageRegistry();       // never destroyed: usable at exit
  }();
  return *instance;
}

}  // namespace

StageId stage(std::string_view name) {
  // Interned as valid UTF-8: a name reaches JSON, log lines and metric labels, and one invalid
  // byte there would make a writer throw or a reader reject the line.
  std::string key = detail::valid_utf8(name);
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.ids.find(key);
  if (it != r.ids.end()) return StageId{it->second};
  return StageId{r.add(key)};
}

const std::string& stage_name(StageId id) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  static const std::string unknown = "?";
  return id.value < r.names.size() ? r.names[id.value] : unknown;
}

namespace detail {

void stage_registry_lock_for_fork() { registry().mu.lock(); }
void stage_registry_unlock_after_fork() { registry().mu.unlock(); }

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
    s.slot = static_cast<std::uint32_t>(order.size());
    s.priced = is_transformer_stage(id);
    order.push_back(id);
  }
  if (s.priced && s.tokens == 0 && tokens > 0) {
    s.tokens = tokens;
    s.batch = batch;
  }
}

void Request::clear() {
  models.clear();
  own_models = false;
  pairs.clear();
  for (std::uint32_t id : order) stages[id] = StageState{};
  order.clear();
}

void Request::note_fraction(std::uint32_t id, double fraction) {
  if (!(fraction >= 0.0)) return;  // NaN or negative: nothing said
  if (fraction > 1.0) fraction = 1.0;
  if (id < stages.size() && stages[id].open > 0) {
    stages[id].pending_fraction = fraction;
    return;
  }
  // The call has closed already (a post-forward hook outside the timed call).
  for (auto it = pairs.rbegin(); it != pairs.rend(); ++it) {
    if (it->stage == id) {
      it->fraction = fraction;
      return;
    }
  }
}

void Request::note_dtype(std::uint32_t id, Dtype dtype) {
  if (id >= stages.size() || !stages[id].seen) return;  // no call of it in this request
  if (!stages[id].dtype) stages[id].dtype = dtype;
}

bool Request::needs_tokens(std::uint32_t id) const {
  if (id < stages.size() && stages[id].seen) return stages[id].priced && stages[id].tokens == 0;
  return is_transformer_stage(id);
}

}  // namespace detail
}  // namespace vxperf
