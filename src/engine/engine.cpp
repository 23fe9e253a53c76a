// vxperf::Engine: the public face of EngineCore.
#include "vxperf/engine.h"

#include "engine/engine_core.h"
#include "vxperf/training.h"

namespace vxperf {

namespace internal {
EngineCore& core_of(Engine& engine) { return *engine.core_; }
}  // namespace internal

Engine::Engine(EngineOptions options)
    : core_(std::make_unique<internal::EngineCore>(*this, std::move(options))) {}

Engine::~Engine() = default;

const Settings& Engine::settings() const { return core_->settings(); }
int Engine::level() const { return core_->level(); }
Topology Engine::topology() const { return core_->topology(); }
void Engine::set_topology(int rank, int world_size) { core_->set_topology(rank, world_size); }
void Engine::set_parallel(const ParallelSpec& spec) { core_->set_parallel(spec); }
void Engine::set_sequence_parallel(int sp) { core_->set_sequence_parallel(sp); }
int Engine::dp_degree() const { return core_->dp_degree(); }
bool Engine::should_log() const { return core_->should_log(); }

// The members below never throw into the program: measurement must not take a run down, so a
// failure (out of memory, a program's sink or log function throwing) costs that one call only.

void Engine::declare_model(std::string_view stage, const ModelInfo& info) {
  try {
    core_->declare_model(stage, info);
  } catch (...) {
  }
}

bool Engine::wants_measured_peak() const { return core_->wants_measured_peak(); }
void Engine::set_measured_peak(int device, const MeasuredPeak& peak) {
  try {
    core_->set_measured_peak(device, peak);
  } catch (...) {
  }
}

void Engine::set_device_backend(std::shared_ptr<DeviceBackend> device) {
  try {
    core_->set_device_backend(std::move(device));
  } catch (...) {
  }
}

void Engine::add_sink(std::shared_ptr<RecordSink> sink) {
  try {
    core_->add_sink(std::move(sink));
  } catch (...) {
  }
}

void Engine::add_observer(std::shared_ptr<Observer> observer) {
  try {
    core_->add_observer(std::move(observer));
  } catch (...) {
  }
}

void Engine::notice(std::string_view line) { core_->notice(line); }
void Engine::set_rank_exchange(RankExchange exchange) {
  try {
    core_->set_rank_exchange(std::move(exchange));
  } catch (...) {
  }
}
Trainer& Engine::trainer() { return core_->trainer(); }
Trainer* Engine::existing_trainer() { return core_->existing_trainer(); }
void Engine::shutdown() { core_->shutdown(); }

}  // namespace vxperf
