// fork() while engines live (see runtime/fork_guard.h for the protocol).
//
// An engine that exists when the process forks is switched off in the child: it measures, writes
// and prints nothing there (the child would share the parent's files, request numbers and device
// context), and the child says so once, on stderr, the first time it tries to measure. The
// process-wide engine is off in the child for good (vxperf::engine() is nullptr). The parent goes
// on as if nothing happened.
#pragma once

namespace vxperf::internal {

class EngineCore;

// Every engine registers while it lives: its locks are held around a fork, and it is switched off
// in the child.
void register_engine(EngineCore* engine);
void unregister_engine(EngineCore* engine);

}  // namespace vxperf::internal
