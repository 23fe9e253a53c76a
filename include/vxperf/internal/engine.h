// Internal (not part of the API): what vxperf/engine.h needs to name the engine's insides.
#pragma once

namespace vxperf {

class Engine;

namespace internal {

class EngineCore;
EngineCore& core_of(Engine& engine);

}  // namespace internal
}  // namespace vxperf
