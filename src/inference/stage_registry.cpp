// Stage names, interned once so that the hot path carries a small integer, never a string.
#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/strings.h"
#include "inference/request.h"
#include "runtime/fork_guard.h"
#include "vxperf/inference.h"
#include "vxperf/stages.h"

namespace vxperf {
namespace {

struct StageRegistry {
  std::mutex mu;
  std::deque<std::string> names;  // a deque keeps references stable as it grows
  std::deque<bool> priced;        // is_priced_stage of each name, asked once
  std::unordered_map<std::string, std::uint32_t> ids;

  // The well-known stages first, in table order: a row's index is its id.
  StageRegistry() {
    for (const StageInfo& row : kStages) add(row.name);
  }
  std::uint32_t add(std::string_view name) {
    auto id = static_cast<std::uint32_t>(names.size());
    names.emplace_back(name);
    priced.push_back(is_priced_stage(name));
    ids.emplace(names.back(), id);
    return id;
  }
};

// Read by the fork hooks without touching registry()'s guard.
std::atomic<StageRegistry*> g_registry{nullptr};

void lock_for_fork() {
  if (StageRegistry* r = g_registry.load()) r->mu.lock();
}
void unlock_after_fork() {
  if (StageRegistry* r = g_registry.load()) r->mu.unlock();
}

StageRegistry& registry() {
  static StageRegistry* instance = [] {
    auto* made = new StageRegistry();  // never destroyed: usable at exit
    g_registry.store(made);
    // A child must not inherit this lock held.
    internal::add_fork_hooks(
        internal::kForkRankStageNames,
        internal::ForkHooks{&lock_for_fork, &unlock_after_fork, &unlock_after_fork});
    return made;
  }();
  return *instance;
}

}  // namespace

StageId stage(std::string_view name) {
  // Interned as valid UTF-8: a name reaches JSON, log lines and metric labels, and one invalid
  // byte there would make a writer throw or a reader reject the line.
  std::string key = internal::valid_utf8(name);
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

namespace internal {

bool is_transformer_stage(std::uint32_t id) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return id < r.priced.size() && r.priced[id];
}

void Request::note_stage(std::uint32_t id, std::int64_t tokens, std::int64_t batch) {
  if (id >= stages.size()) stages.resize(id + 1);
  StageState& s = stages[id];
  if (!s.seen) {
    s.seen = true;
    s.slot = static_cast<std::uint32_t>(order.size());
    {
      // One look at the registry per stage and request: its name (for observers) and whether it
      // is priced. The deque keeps the name where it is.
      auto& r = registry();
      std::lock_guard<std::mutex> lock(r.mu);
      if (id < r.names.size()) {
        s.name = r.names[id];
        s.priced = r.priced[id];
      } else {
        s.name = "?";
        s.priced = false;
      }
    }
    order.push_back(id);
  }
  if (s.priced && s.tokens == 0 && tokens > 0) {
    s.tokens = tokens;
    s.batch = batch;
  }
}

void Request::clear() {
  meter = Context::Metering{};
  metered = DeviceReadings{};
  videos = 1;
  denoising_steps = 0;
  queue_s = -1;
  frames = 0;
  fps = 0;
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
      it->attn_fraction = -1;  // the whole call's word: its attention with it
      return;
    }
  }
}

void Request::note_work(std::uint32_t id, const ForwardWork& work) {
  ForwardWork said = work;
  if (!(said.fraction >= 0.0)) said.fraction = -1;  // NaN: nothing said
  if (said.fraction > 1.0) said.fraction = 1.0;
  if (!(said.attn_fraction >= 0.0) || said.fraction < 0) said.attn_fraction = -1;
  if (said.attn_fraction > 1.0) said.attn_fraction = 1.0;
  if (id < stages.size() && stages[id].open > 0) {
    StageState& st = stages[id];
    st.pending_work = said;
    // A count read from the blocks: no later call needs to guess one.
    if (st.priced && st.tokens == 0 && said.tokens > 0) {
      st.tokens = said.tokens;
      st.batch = said.batch > 0 ? said.batch : st.batch;
    }
    return;
  }
  // The call has closed already: its fraction is replaced only where nobody said one.
  for (auto it = pairs.rbegin(); it != pairs.rend(); ++it) {
    if (it->stage == id) {
      if (said.tokens > 0) it->tokens = said.tokens;
      if (said.batch > 0) it->batch = said.batch;
      if (said.fraction >= 0 && it->fraction == 1.0) {
        it->fraction = said.fraction;
        it->attn_fraction = said.attn_fraction;
      }
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

}  // namespace internal
}  // namespace vxperf
