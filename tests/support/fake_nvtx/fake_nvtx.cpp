// A fake libnvToolsExt.so.1: nvtxRangePushA and nvtxRangePop keep, per thread, the stack NVTX
// keeps, and log every call ("push <name>", "pop <name>") for the tests to read.
#include <mutex>
#include <string>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
std::mutex mu;
std::vector<std::string> log_lines;
std::string joined;
thread_local std::vector<std::string> stack;
}  // namespace

// The new depth, as NVTX returns it (0-based: the range's level).
FAKE_EXPORT int nvtxRangePushA(const char* message) {
  stack.emplace_back(message != nullptr ? message : "");
  std::lock_guard<std::mutex> lock(mu);
  log_lines.push_back("push " + stack.back());
  return static_cast<int>(stack.size()) - 1;
}

// The depth before the pop; -1 with nothing to pop (as NVTX does).
FAKE_EXPORT int nvtxRangePop() {
  std::lock_guard<std::mutex> lock(mu);
  if (stack.empty()) {
    log_lines.push_back("pop (none)");
    return -1;
  }
  log_lines.push_back("pop " + stack.back());
  stack.pop_back();
  return static_cast<int>(stack.size());
}

FAKE_EXPORT void fake_nvtx_reset() {
  std::lock_guard<std::mutex> lock(mu);
  log_lines.clear();
  stack.clear();
}

// Every call since the reset, one a line.
FAKE_EXPORT const char* fake_nvtx_log() {
  std::lock_guard<std::mutex> lock(mu);
  joined.clear();
  for (const auto& l : log_lines) joined += l + "\n";
  return joined.c_str();
}
