#include "engine/fork_safety.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "engine/engine_core.h"
#include "runtime/fork_guard.h"

namespace vxperf::internal {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<EngineCore*> engines;
};

// Read by the fork hooks without a static's guard.
std::atomic<Registry*> g_registry{nullptr};

Registry& registry() {
  static Registry* instance = [] {
    auto* made = new Registry();  // never destroyed: engines may outlive static dtors
    g_registry.store(made);
    return made;
  }();
  return *instance;
}

void lock_engines() {
  Registry* r = g_registry.load();
  if (r == nullptr) return;
  r->mu.lock();
  for (EngineCore* engine : r->engines) engine->lock_for_fork();
}

void unlock_engines() {
  Registry* r = g_registry.load();
  if (r == nullptr) return;
  for (auto it = r->engines.rbegin(); it != r->engines.rend(); ++it) (*it)->unlock_after_fork();
  r->mu.unlock();
}

void engines_in_child() {
  // Only the forking thread exists here: plain stores, read by no other thread.
  if (Registry* r = g_registry.load()) {
    for (EngineCore* engine : r->engines) engine->mark_forked();
  }
  unlock_engines();
}

}  // namespace

void register_engine(EngineCore* engine) {
  // Registered before the registry's lock is taken: the fork hooks' table is never waited for
  // while holding a lock they take.
  add_fork_hooks(kForkRankEngines, ForkHooks{&lock_engines, &unlock_engines, &engines_in_child});
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.engines.push_back(engine);
}

void unregister_engine(EngineCore* engine) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.engines.erase(std::remove(r.engines.begin(), r.engines.end(), engine), r.engines.end());
}

}  // namespace vxperf::internal
