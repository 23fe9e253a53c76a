#include "core/fork_safety.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "core/engine_core.h"
#include "core/request.h"
#include "sinks/write_line.h"
#include "vxperf/inference.h"

namespace vxperf::detail {

namespace {

struct Registry {
  std::mutex mu;
  std::vector<EngineCore*> engines;
};

Registry& registry() {
  static auto* instance = new Registry();  // never destroyed: engines may outlive static dtors
  return *instance;
}

std::atomic<bool> g_said_off{false};

// The order every handler takes the locks in: the build lock, the engines, the stage names
// (the order the code itself nests them in).
void prepare() {
  process_engine_lock_for_fork();
  registry().mu.lock();
  for (EngineCore* engine : registry().engines) engine->lock_for_fork();
  stage_registry_lock_for_fork();
}

void unlock_all() {
  stage_registry_unlock_after_fork();
  auto& engines = registry().engines;
  for (auto it = engines.rbegin(); it != engines.rend(); ++it) (*it)->unlock_after_fork();
  registry().mu.unlock();
  process_engine_unlock_after_fork();
}

void in_parent() { unlock_all(); }

void in_child() {
  g_said_off.store(false, std::memory_order_relaxed);
  // Only the forking thread exists here: plain stores, read by no other thread.
  for (EngineCore* engine : registry().engines) engine->mark_forked();
  // The forking thread is the child's only thread. A request it had open is dropped at its end
  // without a device call (the child has no device context) and without a record.
  if (Request* r = current_request) {
    r->device_events = false;
    current_request = nullptr;
  }
  process_engine_forked_child();
  unlock_all();
}

}  // namespace

void install_fork_handlers() {
  static const bool installed = [] {
    pthread_atfork(prepare, in_parent, in_child);
    return true;
  }();
  (void)installed;
}

void register_engine(EngineCore* engine) {
  install_fork_handlers();
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().engines.push_back(engine);
}

void unregister_engine(EngineCore* engine) {
  std::lock_guard<std::mutex> lock(registry().mu);
  auto& engines = registry().engines;
  engines.erase(std::remove(engines.begin(), engines.end(), engine), engines.end());
}

void say_off_in_forked_child() noexcept {
  if (g_said_off.load(std::memory_order_relaxed) || g_said_off.exchange(true)) return;
  try {
    // Straight to stderr: a program's own log function may wait on a lock of its parent's.
    write_line(STDERR_FILENO,
               "vxperf: metrics are off in this forked child (pid " + std::to_string(::getpid()) +
                   "); the parent's records, trace and request numbers stay its own");
  } catch (...) {
  }
}

}  // namespace vxperf::detail
