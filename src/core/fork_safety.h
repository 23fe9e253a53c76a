// fork() while vxperf is in use (pthread_atfork).
//
// An engine that exists when the process forks is switched off in the child: it measures, writes
// and prints nothing there (the child would share the parent's files, request numbers and device
// context), and the child says so once, on stderr, the first time it tries to measure. The
// process-wide engine is off in the child for good (vxperf::engine() is nullptr). The parent goes
// on as if nothing happened. Around the fork every lock a child could still take (the engines'
// own, the stage names', the process-wide engine's build lock) is held by the forking thread, so
// that none is copied into the child locked by a thread that does not exist there.
#pragma once

namespace vxperf::detail {

class EngineCore;

// Every engine registers for the fork handlers' locking while it lives.
void register_engine(EngineCore* engine);
void unregister_engine(EngineCore* engine);

// Says, once per process, that the engines of the parent are off in this child.
void say_off_in_forked_child() noexcept;

// Installs the fork handlers (once; also done by register_engine).
void install_fork_handlers();

// The locks outside the engines, held around a fork (defined beside them).
void stage_registry_lock_for_fork();
void stage_registry_unlock_after_fork();
void process_engine_lock_for_fork();
void process_engine_unlock_after_fork();
// The child's side: the process-wide engine is off in the child for good.
void process_engine_forked_child();

}  // namespace vxperf::detail
