// fork() while vxperf is in use (pthread_atfork), as the layers that hold locks take part in it.
//
// Around a fork every lock a child could still take is held by the forking thread, so that none is
// copied into the child locked by a thread that does not exist there; in the child each part then
// does what it must (the engines switch off) before the locks are released. The parts register
// here, each with its rank: prepare runs in ascending rank (the order the code nests the locks in),
// parent and child in descending rank.
//
// Thread safety: add_fork_hooks may be called from any thread, holding any lock: it takes none.
#pragma once

namespace vxperf::internal {

struct ForkHooks {
  void (*prepare)() = nullptr;  // take the locks
  void (*parent)() = nullptr;   // release them
  void (*child)() = nullptr;    // switch off, then release them
};

// Ranks of the parts that take part (lower: taken first).
inline constexpr int kForkRankProcessEngine = 0;
inline constexpr int kForkRankEngines = 1;
inline constexpr int kForkRankStageNames = 2;
inline constexpr int kForkRankRequests = 3;

// Registers `hooks` under `rank` (once per rank: a second registration of a rank is ignored). The
// process's fork handlers are installed when it starts.
void add_fork_hooks(int rank, ForkHooks hooks);

// Says, once per process, that the engines of the parent are off in this child (straight to
// stderr: a program's own log function may wait on a lock of its parent's).
void say_off_in_forked_child() noexcept;

}  // namespace vxperf::internal
