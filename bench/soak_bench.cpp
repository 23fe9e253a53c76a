// Soak: what the engine keeps per request and per training step over a long run (issue #11, item
// 1; goal: under 16 bytes each). Not timed: it measures memory.
//
// How: the heap's bytes in use (glibc's mallinfo2(): uordblks + hblkhd, every allocation in the
// process, mmap'ed blocks included)
// after a warm-up, then again after N more requests (or steps); the difference over N is what each
// one keeps. The process's resident set (/proc/self/statm) is printed beside it, for the pages the
// heap did not give back. Lines and records are made and written as in a real run: the log
// function formats and drops them, records go to /dev/null through the records file.
//
// usage: vxperf_soak_bench [ITERATIONS]   (default 1000000)
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/training.h"

namespace {

// Bytes in use: the arenas' chunks plus the blocks large enough to be mmap'ed on their own (an
// 8 MB vector is one of those, and uordblks alone would not see it).
long long heap_in_use() {
  struct mallinfo2 m = mallinfo2();
  return static_cast<long long>(m.uordblks + m.hblkhd);
}

long long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

std::unique_ptr<vxperf::Engine> make_engine() {
  vxperf::EngineOptions options;
  options.settings.level = 1;
  options.settings.every = 50;
  options.settings.json_path = "/dev/null";
  options.log = [](std::string_view) {};
  return std::make_unique<vxperf::Engine>(std::move(options));
}

void request(vxperf::Engine& engine) {
  vxperf::RequestScope r(engine);
  { vxperf::StageScope s(vxperf::kTextEncoder); }
  for (int i = 0; i < 4; ++i) {
    vxperf::StageScope s(vxperf::kTransformer, 32760, 2);
  }
  { vxperf::StageScope s(vxperf::kVaeDecode); }
}

void step(vxperf::Trainer& trainer, const void* optimizer) {
  vxperf::MicroStep micro(&trainer);
  { vxperf::ModelCall c(vxperf::Phase::kForward, 32760, 1, &trainer); }
  { vxperf::Backward b(&trainer); }
  { vxperf::Clip c(&trainer); }
  { vxperf::OptimizerStep o(optimizer, true, &trainer); }
}

template <class Fn>
void soak(const char* what, long long n, Fn&& one) {
  for (int i = 0; i < 10000; ++i) one();  // warm: every buffer at its working size
  long long heap0 = heap_in_use();
  long long rss0 = resident_bytes();
  for (long long i = 0; i < n; ++i) one();
  long long heap = heap_in_use() - heap0;
  long long rss = resident_bytes() - rss0;
  std::printf(
      "%-8s %9lld iterations: heap +%lld bytes (%.2f bytes/%s), resident +%lld bytes "
      "(%.2f bytes/%s)\n",
      what, n, heap, double(heap) / double(n), what, rss, double(rss) / double(n), what);
}

}  // namespace

int main(int argc, char** argv) {
  long long n = argc > 1 ? std::atoll(argv[1]) : 1000000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: vxperf_soak_bench [ITERATIONS]\n");
    return 2;
  }
  auto engine = make_engine();
  soak("request", n, [&] { request(*engine); });
  vxperf::Trainer& trainer = engine->trainer();
  int optimizer = 0;
  soak("step", n, [&] { step(trainer, &optimizer); });
  engine->shutdown();
  return 0;
}
