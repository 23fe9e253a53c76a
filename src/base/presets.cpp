#include "vxperf/presets.h"

namespace vxperf {
namespace {

// Wan2.1-T2V's shapes; what a preset does not say is DitDims' default (text length 512, umT5's
// 4096-wide text, patch 1x2x2, VAE stride 4x8x8).
struct Preset {
  const char* name;
  DitDims dims;  // dim, ffn, heads, layers
};
const Preset kPresets[] = {
    {"wan2.1-t2v-1.3b", {1536, 8960, 12, 30}},
    {"wan2.1-t2v-14b", {5120, 13824, 40, 40}},
};

}  // namespace

std::optional<DitDims> dit_preset(std::string_view name) {
  for (const auto& p : kPresets) {
    if (name == p.name) return p.dims;
  }
  return std::nullopt;
}

std::vector<std::string> dit_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : kPresets) names.emplace_back(p.name);
  return names;
}

}  // namespace vxperf
