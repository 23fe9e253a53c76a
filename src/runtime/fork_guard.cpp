#include "runtime/fork_guard.h"

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include "output/write_line.h"

namespace vxperf::internal {
namespace {

constexpr int kRanks = 4;

struct Table {
  std::mutex mu;  // held from prepare to parent/child: no registration during a fork
  std::array<ForkHooks, kRanks> hooks{};
  std::array<bool, kRanks> set{};
};

Table& table() {
  static auto* instance = new Table();  // never destroyed: forks may come during static dtors
  return *instance;
}

std::atomic<bool> g_said_off{false};

void prepare() {
  Table& t = table();
  t.mu.lock();
  for (int r = 0; r < kRanks; ++r) {
    if (t.set[r] && t.hooks[r].prepare) t.hooks[r].prepare();
  }
}

void in_parent() {
  Table& t = table();
  for (int r = kRanks - 1; r >= 0; --r) {
    if (t.set[r] && t.hooks[r].parent) t.hooks[r].parent();
  }
  t.mu.unlock();
}

void in_child() {
  g_said_off.store(false, std::memory_order_relaxed);
  Table& t = table();
  // Only the forking thread exists here: each part switches off and releases its locks.
  for (int r = kRanks - 1; r >= 0; --r) {
    if (t.set[r] && t.hooks[r].child) t.hooks[r].child();
  }
  t.mu.unlock();
}

}  // namespace

void add_fork_hooks(int rank, ForkHooks hooks) {
  static const bool installed = [] {
    pthread_atfork(prepare, in_parent, in_child);
    return true;
  }();
  (void)installed;
  if (rank < 0 || rank >= kRanks) return;
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.set[rank]) return;
  t.hooks[rank] = hooks;
  t.set[rank] = true;
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
