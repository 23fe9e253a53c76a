#include "vxperf/presets.h"

namespace vxperf {
namespace {

struct Preset {
  const char* name;
  std::int64_t dim, ffn, heads, layers, text_len, text_dim;
};
constexpr Preset kPresets[] = {
    {"wan2.1-t2v-1.3b", 1536, 8960, 12, 30, 512, 4096},
    {"wan2.1-t2v-14b", 5120, 13824, 40, 40, 512, 4096},
};

}  // namespace

std::optional<DitDims> dit_preset(std::string_view name) {
  for (const auto& p : kPresets) {
    if (name == p.name) {
      DitDims d;
      d.dim = p.dim;
      d.ffn = p.ffn;
      d.heads = p.heads;
      d.layers = p.layers;
      d.text_len = p.text_len;
      d.text_dim = p.text_dim;
      return d;
    }
  }
  return std::nullopt;
}

std::vector<std::string> dit_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : kPresets) names.emplace_back(p.name);
  return names;
}

}  // namespace vxperf
