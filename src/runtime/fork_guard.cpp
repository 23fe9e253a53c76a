#include "runtime/fork_guard.h"

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <string>

#include "vxperf/file_io.h"

namespace vxperf::internal {
namespace {

constexpr int kRanks = 4;

// Lock-free: parts register while holding their own locks (the process-wide engine registers its
// halves while holding its build lock), so a lock here would be taken in both orders around a
// fork. A slot is claimed once, filled, then published; a fork sees the slots published by then.
struct Slot {
  std::atomic<bool> claimed{false};
  std::atomic<bool> ready{false};
  ForkHooks hooks;
};
std::array<Slot, kRanks> g_slots;

std::atomic<bool> g_said_off{false};

template <class Pick>
void run(int from, int to, int step, Pick pick) {
  for (int r = from; r != to; r += step) {
    Slot& slot = g_slots[static_cast<std::size_t>(r)];
    if (!slot.ready.load(std::memory_order_acquire)) continue;
    if (void (*fn)() = pick(slot.hooks)) fn();
  }
}

void prepare() {
  run(0, kRanks, 1, [](const ForkHooks& h) { return h.prepare; });
}

void in_parent() {
  run(kRanks - 1, -1, -1, [](const ForkHooks& h) { return h.parent; });
}

void in_child() {
  g_said_off.store(false, std::memory_order_relaxed);
  // Only the forking thread exists here: each part switches off and releases its locks.
  run(kRanks - 1, -1, -1, [](const ForkHooks& h) { return h.child; });
}

// Installed when the program starts, not at a first registration: a registration may come while
// its part holds a lock, and pthread_atfork takes the C library's own.
[[maybe_unused]] const int g_installed = pthread_atfork(prepare, in_parent, in_child);

}  // namespace

void add_fork_hooks(int rank, ForkHooks hooks) {
  if (rank < 0 || rank >= kRanks) return;
  Slot& slot = g_slots[static_cast<std::size_t>(rank)];
  if (slot.claimed.exchange(true, std::memory_order_acq_rel)) return;
  slot.hooks = hooks;
  slot.ready.store(true, std::memory_order_release);
}

void say_off_in_forked_child() noexcept {
  if (g_said_off.load(std::memory_order_relaxed) || g_said_off.exchange(true)) return;
  try {
    write_line(STDERR_FILENO,
               "vxperf: metrics are off in this forked child (pid " + std::to_string(::getpid()) +
                   "); the parent's records, trace and request numbers stay its own");
  } catch (...) {
  }
}

}  // namespace vxperf::internal
