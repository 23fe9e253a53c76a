// The embedded Wan2.1-shaped text-to-video workload: a small text encoder, a DiT, a 3D-conv VAE,
// a flow-matching Euler sampler and a trainer. Random seeded weights; the point is the shapes and
// the call pattern, not the pictures.
#pragma once

#include <cstdint>

#include "vxperf/presets.h"
#include "vxperf/torch.h"

// Outside namespace vxperf: TORCH_MODULE names torch::nn unqualified, which vxperf::torch would
// shadow.
namespace vxperf_demo {

using vxperf::torch::ModelTraits;
using vxperf::torch::PatchSize;
using vxperf::torch::Projection;

struct Config {
  std::int64_t dim = 96, ffn = 256, heads = 4, layers = 2;
  std::int64_t text_len = 16, text_dim = 32, text_layers = 1, text_heads = 2, vocab = 1024;
  std::int64_t latent_channels = 16, vae_channels = 16;
  PatchSize patch{1, 2, 2};
  std::int64_t freq_dim = 256;  // sinusoidal timestep features
};
// The shapes of a preset (vxperf/presets.h); the text tower and VAE are the demo's own.
Config config_from(const vxperf::DitDims& dims);
Config tiny_config();        // the demo's default: seconds on a CPU
Config wan21_1_3b_config();  // "wan2.1-t2v-1.3b"

// A linear projection that can grow a LoRA adapter: base(x) + scale * up(down(x)).
struct ProjImpl : ::torch::nn::Module, Projection {
  ProjImpl(std::int64_t in, std::int64_t out);
  ::torch::Tensor forward(const ::torch::Tensor& x);
  // Freezes nothing itself; adds zero-initialised adapters (so the output is unchanged).
  void enable_lora(std::int64_t rank, double alpha);
  std::int64_t out_features() const override { return base->options.out_features(); }

  ::torch::nn::Linear base{nullptr}, lora_down{nullptr}, lora_up{nullptr};
  double scale = 0;
};
TORCH_MODULE(Proj);

struct AttentionImpl : ::torch::nn::Module {
  AttentionImpl(std::int64_t dim, std::int64_t heads);
  // Self-attention when `context` is undefined.
  ::torch::Tensor forward(const ::torch::Tensor& x, const ::torch::Tensor& context = {});
  Proj q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  std::int64_t heads;
};
TORCH_MODULE(Attention);

struct DiTBlockImpl : ::torch::nn::Module {
  explicit DiTBlockImpl(const Config& c);
  ::torch::Tensor forward(::torch::Tensor x, const ::torch::Tensor& e0,
                          const ::torch::Tensor& context);
  ::torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
  Attention self_attn{nullptr}, cross_attn{nullptr};
  ::torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  ::torch::Tensor modulation;
};
TORCH_MODULE(DiTBlock);

struct MiniDiTImpl : ::torch::nn::Module, ModelTraits {
  explicit MiniDiTImpl(const Config& c);
  // x: (B, C, F, H, W) latents; t: (B) timesteps in [0, 1000]; context: (B, L, text_dim).
  ::torch::Tensor forward(const ::torch::Tensor& x, const ::torch::Tensor& t,
                          const ::torch::Tensor& context);
  std::int64_t text_len() const override { return config.text_len; }
  std::optional<PatchSize> patch_size() const override { return config.patch; }
  // LoRA on every attention projection of the blocks, everything else frozen.
  void to_lora(std::int64_t rank, double alpha);

  Config config;
  ::torch::nn::Conv3d patch_embedding{nullptr};
  ::torch::nn::Linear text_in{nullptr}, text_out{nullptr}, time_in{nullptr}, time_out{nullptr},
      time_projection{nullptr}, head{nullptr};
  ::torch::nn::LayerNorm head_norm{nullptr};
  ::torch::nn::ModuleList blocks{nullptr};
  ::torch::Tensor head_modulation;
};
TORCH_MODULE(MiniDiT);

struct TextEncoderImpl : ::torch::nn::Module {
  explicit TextEncoderImpl(const Config& c);
  ::torch::Tensor forward(const ::torch::Tensor& ids);  // (B, L) int64 -> (B, L, text_dim)
  ::torch::nn::Embedding embed{nullptr};
  ::torch::nn::ModuleList layers{nullptr};
  ::torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(TextEncoder);

// 4x temporal (causal: F -> 1 + (F-1)/4), 8x spatial.
struct VaeEncoderImpl : ::torch::nn::Module {
  explicit VaeEncoderImpl(const Config& c);
  ::torch::Tensor forward(const ::torch::Tensor& video);  // (B, 3, F, H, W) -> latent mean
  ::torch::nn::Sequential body{nullptr};
  std::int64_t z;
};
TORCH_MODULE(VaeEncoder);

struct VaeDecoderImpl : ::torch::nn::Module {
  explicit VaeDecoderImpl(const Config& c);
  ::torch::Tensor forward(const ::torch::Tensor& latent);  // -> (B, 3, 1 + 4(f-1), 8h, 8w)
  ::torch::nn::Conv3d conv_in{nullptr}, up1{nullptr}, up2{nullptr}, up3{nullptr}, conv_out{nullptr};
};
TORCH_MODULE(VaeDecoder);

// The matmul FLOPs of one MiniDiT forward over one sample, counted layer by layer: every
// Linear/Conv3d at the length it really runs on (latent tokens, text tokens or once per sample)
// plus QK^T and AV. Elementwise work (norms, softmax, modulation) is not counted.
double exact_matmul_flops(const Config& c, std::int64_t tokens);

// FNV-1a 64 over the raw bytes of tensors, as hex.
class Digest {
 public:
  void add(const ::torch::Tensor& t);
  std::string hex() const;

 private:
  std::uint64_t h_ = 1469598103934665603ull;
};

}  // namespace vxperf_demo
