// The process-wide engine: built at first use from vxperf::configure's Config and the
// environment, never destroyed (the exit handler and late threads may still use it).
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "base/env_parse.h"
#include "base/process_age.h"
#include "base/topology_env.h"
#include "engine/engine_core.h"
#include "output/stderr_log.h"
#include "runtime/fork_guard.h"
#include "vxperf/clock.h"
#include "vxperf/config.h"
#include "vxperf/listen_address.h"
#include "vxperf/prometheus_endpoint.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

void forked_child();

// One lock for building the engine and for configure(); never taken once the engine is on.
std::atomic<std::mutex*> g_build_mu{nullptr};

void lock_build() {
  if (std::mutex* mu = g_build_mu.load()) mu->lock();
}
void unlock_build() {
  if (std::mutex* mu = g_build_mu.load()) mu->unlock();
}
void build_in_child() {
  forked_child();
  unlock_build();
}

std::mutex& build_mu() {
  static std::mutex* mu = [] {
    auto* made = new std::mutex();  // never destroyed: the exit handler may still build
    g_build_mu.store(made);
    internal::add_fork_hooks(internal::kForkRankProcessEngine,
                             internal::ForkHooks{&lock_build, &unlock_build, &build_in_child});
    return made;
  }();
  return *mu;
}

Config& pending_config() {
  static auto* config = new Config();
  return *config;
}

// nullptr until built on; `decided_off` once the environment (and Config) said off, so that a
// disabled run pays one relaxed load per call, not a lock.
std::atomic<Engine*> g_engine{nullptr};
std::atomic<bool> g_decided_off{false};
// A forked child of a process that had the engine: off for good (see core/fork_safety.h).
std::atomic<bool> g_forked_off{false};

// VIDEOX_PERF_PROMETHEUS: serves the engine's records at GET /metrics for the life of the process
// (never stopped: the exit handler may still settle records). Ranks sharing a node each take the
// port plus their LOCAL_RANK, so that eight ranks of a node serve eight ports.
void start_endpoint(Engine& engine, const std::string& value, const LogFn& log) {
  std::string why;
  auto address = parse_listen_address(value, &why);
  if (!address) return;  // reported while parsing the settings
  if (auto local = process_env()("LOCAL_RANK")) {
    auto offset = internal::parse_int(*local);
    if (offset && *offset > 0 && address->port + *offset <= 65535) {
      address->port += static_cast<int>(*offset);
    }
  }
  static std::unique_ptr<PrometheusEndpoint>* endpoint =
      new std::unique_ptr<PrometheusEndpoint>(start_prometheus(*address, nullptr, log));
  if (*endpoint) {
    engine.add_sink((*endpoint)->sink());
    engine.notice("vxperf: Prometheus metrics at http://" + (*endpoint)->address().host + ":" +
                  std::to_string((*endpoint)->address().port) + "/metrics");
  }
}

Engine* build_locked() {
  if (Engine* e = g_engine.load(std::memory_order_acquire)) return e;
  const Config& config = pending_config();
  std::vector<std::string> problems;
  // A level given in code stands in for VIDEOX_PERF; every other variable is read as it is.
  EnvLookup env = process_env();
  if (config.level) {
    env = [level = std::to_string(*config.level)](
              const std::string& name) -> std::optional<std::string> {
      if (name == "VIDEOX_PERF") return level;
      return process_env()(name);
    };
  }
  Settings settings = Settings::parse(env, &problems, config.settings);
  LogFn log = config.log ? config.log : internal::stderr_log();
  if (!settings.enabled()) {
    // Only VIDEOX_PERF itself was read: said once, however often this is asked again.
    if (!g_decided_off.exchange(true, std::memory_order_relaxed)) {
      for (const auto& p : problems) log(p);
    }
    return nullptr;
  }
  EngineOptions options;
  options.settings = settings;
  options.topology =
      config.topology ? *config.topology : internal::topology_from_env(process_env(), &problems);
  options.cuda_on_demand = true;
  options.clock = std::make_shared<SteadyClock>();
  if (auto age = internal::process_age_s()) options.process_start_s = options.clock->now_s() - *age;
  options.log = log;
  options.sinks = config.sinks;
  options.rank_exchange = config.rank_exchange;
  for (const auto& p : problems) log(p);
  auto* e = new Engine(std::move(options));
  if (!settings.prometheus.empty()) start_endpoint(*e, settings.prometheus, log);
  g_engine.store(e, std::memory_order_release);
  static bool exit_handler = [] {
    std::atexit([] {
      if (Engine* process = g_engine.load(std::memory_order_acquire)) process->shutdown();
    });
    return true;
  }();
  (void)exit_handler;
  if (e->should_log()) {
    // Without a records file `vxperf report` has nothing to read: say how to get one.
    std::string where =
        settings.json_path.empty()
            ? std::string("; no records file (VIDEOX_PERF_JSON=PATH writes one for vxperf report)")
            : "; records to " + settings.json_path;
    if (!settings.trace_path.empty()) where += "; trace to " + settings.trace_path;
    e->notice("vxperf: metrics on (level " + std::to_string(settings.level) + ")" + where);
  }
  return e;
}

}  // namespace

Engine* engine() {
  Engine* e = g_engine.load(std::memory_order_acquire);
  if (e != nullptr) return e;
  if (g_decided_off.load(std::memory_order_relaxed)) {
    if (g_forked_off.load(std::memory_order_relaxed)) internal::say_off_in_forked_child();
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(build_mu());
  try {
    return build_locked();
  } catch (const std::exception& error) {
    // Out of memory while building, say: the program runs on without metrics, told once.
    if (!g_decided_off.exchange(true, std::memory_order_relaxed)) {
      internal::stderr_log()(std::string("vxperf: metrics could not be started (") + error.what() +
                           "); off");
    }
  } catch (...) {
    g_decided_off.store(true, std::memory_order_relaxed);
  }
  return nullptr;
}

bool enabled() { return engine() != nullptr; }

void shutdown() {
  if (Engine* e = engine()) e->shutdown();
}

namespace {

bool configure_locked(Config config) {
  std::lock_guard<std::mutex> lock(build_mu());
  if (g_forked_off.load(std::memory_order_relaxed)) return false;
  if (Engine* e = g_engine.load(std::memory_order_acquire)) {
    // On already: as the reference's repeated install, only a more verbose level is taken.
    if (config.level) internal::core_of(*e).raise_level(*config.level);
    return false;
  }
  pending_config() = std::move(config);
  // A run decided off may be switched on by code: the next use builds the engine again.
  g_decided_off.store(false, std::memory_order_relaxed);
  return true;
}

}  // namespace

namespace {

// The child's side: the process-wide engine is off in the child for good.
void forked_child() {
  if (g_engine.load(std::memory_order_relaxed) == nullptr) return;  // nothing of the parent's
  g_forked_off.store(true, std::memory_order_relaxed);
  g_decided_off.store(true, std::memory_order_relaxed);
  g_engine.store(nullptr, std::memory_order_release);
}

}  // namespace

bool configure(Config config) {
  try {
    return configure_locked(std::move(config));
  } catch (...) {
    return false;  // never into the program
  }
}

Trainer* trainer() {
  Engine* e = engine();
  if (e == nullptr) return nullptr;
  try {
    return &internal::core_of(*e).trainer();
  } catch (...) {
    return nullptr;  // the scopes are then inert
  }
}

}  // namespace vxperf
