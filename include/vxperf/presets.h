// Named Wan2.1-style DiT shapes, one naming scheme for every command that takes a preset
// (`vxperf flops --preset`, `vxperf demo --preset`): "wan2.1-t2v-1.3b" and "wan2.1-t2v-14b".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vxperf {

// A Wan2.1-style DiT's dimensions.
struct DitDims {
  std::int64_t dim = 0, ffn = 0, heads = 0, layers = 0;
  std::int64_t text_len = 512;
  std::int64_t patch_t = 1, patch_h = 2, patch_w = 2;
  std::int64_t vae_t = 4, vae_h = 8, vae_w = 8;
  std::int64_t latent_channels = 16;
  std::int64_t text_dim = 4096;
  std::int64_t freq_dim = 256;  // sinusoidal time embedding width
};

std::optional<DitDims> dit_preset(std::string_view name);
std::vector<std::string> dit_preset_names();

}  // namespace vxperf
