// NVTX ranges (vxperf/nvtx.h): libnvToolsExt.so.1 through dlopen, its two range calls declared
// here from NVTX's documented C API.
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "backends/shared_library.h"
#include "vxperf/nvtx.h"

namespace vxperf {
namespace {

using nvtxRangePushA_t = int (*)(const char* message);
using nvtxRangePop_t = int (*)();

class NvtxRanges final : public Observer {
 public:
  NvtxRanges(nvtxRangePushA_t push, nvtxRangePop_t pop) : push_(push), pop_(pop) {}

  void on_begin(const Span& s) override {
    std::string name(s.name);
    if (s.kind == SpanKind::kRequest || s.kind == SpanKind::kStep) {
      name += ' ';
      name += std::to_string(s.index);
    }
    push_(name.c_str());
  }
  void on_end(const Span&) override { pop_(); }

 private:
  nvtxRangePushA_t push_;
  nvtxRangePop_t pop_;
};

}  // namespace

std::shared_ptr<Observer> make_nvtx_ranges(const NvtxOptions& options) {
  const NotUsed not_used(options.notice, "NVTX", "no Nsight ranges");
  void* handle = open_library(options.library_path, not_used);
  if (handle == nullptr) return nullptr;
  auto push = reinterpret_cast<nvtxRangePushA_t>(dlsym(handle, "nvtxRangePushA"));
  auto pop = reinterpret_cast<nvtxRangePop_t>(dlsym(handle, "nvtxRangePop"));
  if (push == nullptr || pop == nullptr) {
    not_used(options.library_path + " lacks " +
             (push == nullptr ? "nvtxRangePushA" : "nvtxRangePop"));
    return nullptr;
  }
  return std::make_shared<NvtxRanges>(push, pop);
}

}  // namespace vxperf
