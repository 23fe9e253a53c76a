// A small instrumented program driven by the process environment (VIDEOX_PERF*, RANK, ...), for
// the end-to-end tests in process_env.cmake: the process-wide engine, exit summaries, files.
#include <chrono>
#include <cstdio>
#include <thread>

#include "vxperf/vxperf.h"

namespace {

void busy(double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

int main() {
  if (vxperf::Engine* e = vxperf::engine()) {
    vxperf::ModelInfo dit;
    dit.params = 2100000;
    dit.attention = vxperf::AttentionWidths{512, 512, 8};
    dit.text_tokens = 32;
    e->declare_model("transformer", dit);
  }
  for (int r = 0; r < 3; ++r) {
    vxperf::RequestScope request;
    {
      vxperf::StageScope s(vxperf::kTextEncoder);
      busy(0.001);
    }
    for (int step = 0; step < 4; ++step) {
      vxperf::StageScope s(vxperf::kTransformer, 320, 2);
      busy(0.002);
    }
    {
      vxperf::StageScope s(vxperf::kVaeDecode);
      busy(0.001);
    }
  }
  if (vxperf::Trainer* t = vxperf::trainer()) {
    vxperf::ModelInfo dit;
    dit.params = 2100000;
    t->register_model(dit);
  }
  int optimizer = 0;
  for (int step = 0; step < 5; ++step) {
    vxperf::MicroStep micro;
    {
      vxperf::ModelCall fwd(vxperf::Phase::kForward, 320, 2);
      busy(0.002);
    }
    {
      vxperf::Backward bwd;
      busy(0.003);
    }
    {
      vxperf::OptimizerStep opt(&optimizer);
      busy(0.0005);
    }
  }
  std::puts("done");
  return 0;  // the summaries are printed at exit
}
