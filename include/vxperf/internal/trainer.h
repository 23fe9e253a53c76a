// Internal (not part of the API): what vxperf/training.h needs to name the trainer's insides.
#pragma once

#include <memory>

namespace vxperf {

class Trainer;

namespace internal {

class Context;
class TrainerCore;

// The trainer whose micro-step is open on this thread (set by MicroStep), or nullptr. Lets a
// module wrapper attribute its calls to the right trainer without being told.
inline thread_local Trainer* active_trainer = nullptr;

TrainerCore& core_of(Trainer& trainer);
std::unique_ptr<Trainer> make_trainer(Context& engine);

}  // namespace internal
}  // namespace vxperf
