// The embedded workload's models and helpers (the driver is demo.cpp).
#include "demo/workload.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace vxperf_demo {

namespace F = ::torch::nn::functional;
using ::torch::Tensor;

Config config_from(const vxperf::DitDims& d) {
  Config c;
  c.dim = d.dim;
  c.ffn = d.ffn;
  c.heads = d.heads;
  c.layers = d.layers;
  c.text_len = d.text_len;
  c.text_dim = d.text_dim;
  c.latent_channels = d.latent_channels;
  c.patch = {d.patch_t, d.patch_h, d.patch_w};
  c.freq_dim = d.freq_dim;
  if (c.dim >= 1024) {
    // A stand-in text tower (not umT5's 24 layers) and a wider VAE for the real shapes.
    c.text_layers = 2;
    c.text_heads = 32;
    c.vae_channels = 64;
  }
  return c;
}

Config tiny_config() { return Config{}; }
Config wan21_1_3b_config() { return config_from(*vxperf::dit_preset("wan2.1-t2v-1.3b")); }

// ---- modules ------------------------------------------------------------------------------------

ProjImpl::ProjImpl(std::int64_t in, std::int64_t out) {
  base = register_module("base", ::torch::nn::Linear(in, out));
}

Tensor ProjImpl::forward(const Tensor& x) {
  auto y = base(x);
  if (lora_down) y = y + lora_up(lora_down(x)) * scale;
  return y;
}

void ProjImpl::enable_lora(std::int64_t rank, double alpha) {
  auto in = base->options.in_features(), out = base->options.out_features();
  lora_down = register_module(
      "lora_down", ::torch::nn::Linear(::torch::nn::LinearOptions(in, rank).bias(false)));
  lora_up = register_module("lora_up",
                            ::torch::nn::Linear(::torch::nn::LinearOptions(rank, out).bias(false)));
  ::torch::NoGradGuard no_grad;
  lora_up->weight.zero_();
  scale = alpha / static_cast<double>(rank);
}

AttentionImpl::AttentionImpl(std::int64_t dim, std::int64_t h) : heads(h) {
  q = register_module("q", Proj(dim, dim));
  k = register_module("k", Proj(dim, dim));
  v = register_module("v", Proj(dim, dim));
  o = register_module("o", Proj(dim, dim));
}

Tensor AttentionImpl::forward(const Tensor& x, const Tensor& context) {
  const auto& kv = context.defined() ? context : x;
  auto b = x.size(0), t = x.size(1), l = kv.size(1), d = x.size(2), hd = d / heads;
  auto qh = q(x).view({b, t, heads, hd}).transpose(1, 2);
  auto kh = k(kv).view({b, l, heads, hd}).transpose(1, 2);
  auto vh = v(kv).view({b, l, heads, hd}).transpose(1, 2);
  auto scores = ::torch::matmul(qh, kh.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));
  auto out = ::torch::matmul(scores.softmax(-1), vh);
  return o(out.transpose(1, 2).reshape({b, t, d}));
}

DiTBlockImpl::DiTBlockImpl(const Config& c) {
  auto plain = ::torch::nn::LayerNormOptions({c.dim}).elementwise_affine(false).eps(1e-6);
  norm1 = register_module("norm1", ::torch::nn::LayerNorm(plain));
  norm2 = register_module("norm2", ::torch::nn::LayerNorm(plain));
  norm3 = register_module("norm3", ::torch::nn::LayerNorm(::torch::nn::LayerNormOptions({c.dim})));
  self_attn = register_module("self_attn", Attention(c.dim, c.heads));
  cross_attn = register_module("cross_attn", Attention(c.dim, c.heads));
  fc1 = register_module("fc1", ::torch::nn::Linear(c.dim, c.ffn));
  fc2 = register_module("fc2", ::torch::nn::Linear(c.ffn, c.dim));
  modulation =
      register_parameter("modulation", ::torch::randn({1, 6, c.dim}) / std::sqrt(double(c.dim)));
}

Tensor DiTBlockImpl::forward(Tensor x, const Tensor& e0, const Tensor& context) {
  auto m = (modulation + e0).chunk(6, 1);  // shift/scale/gate for attention, then for the FFN
  auto y = self_attn(norm1(x) * (1 + m[1]) + m[0]);
  x = x + y * m[2];
  x = x + cross_attn(norm3(x), context);
  y = fc2(F::gelu(fc1(norm2(x) * (1 + m[4]) + m[3]), F::GELUFuncOptions().approximate("tanh")));
  return x + y * m[5];
}

MiniDiTImpl::MiniDiTImpl(const Config& c) : config(c) {
  auto p = c.patch;
  patch_embedding = register_module(
      "patch_embedding",
      ::torch::nn::Conv3d(::torch::nn::Conv3dOptions(c.latent_channels, c.dim, {p[0], p[1], p[2]})
                              .stride({p[0], p[1], p[2]})));
  text_in = register_module("text_in", ::torch::nn::Linear(c.text_dim, c.dim));
  text_out = register_module("text_out", ::torch::nn::Linear(c.dim, c.dim));
  time_in = register_module("time_in", ::torch::nn::Linear(c.freq_dim, c.dim));
  time_out = register_module("time_out", ::torch::nn::Linear(c.dim, c.dim));
  time_projection = register_module("time_projection", ::torch::nn::Linear(c.dim, 6 * c.dim));
  blocks = register_module("blocks", ::torch::nn::ModuleList());
  for (std::int64_t i = 0; i < c.layers; ++i) blocks->push_back(DiTBlock(c));
  head_norm = register_module(
      "head_norm",
      ::torch::nn::LayerNorm(::torch::nn::LayerNormOptions({c.dim}).elementwise_affine(false)));
  head =
      register_module("head", ::torch::nn::Linear(c.dim, p[0] * p[1] * p[2] * c.latent_channels));
  head_modulation = register_parameter("head_modulation",
                                       ::torch::randn({1, 2, c.dim}) / std::sqrt(double(c.dim)));
}

Tensor MiniDiTImpl::forward(const Tensor& x, const Tensor& t, const Tensor& context) {
  const auto& c = config;
  auto b = x.size(0), f = x.size(2) / c.patch[0], h = x.size(3) / c.patch[1],
       w = x.size(4) / c.patch[2];
  auto tokens = patch_embedding(x).flatten(2).transpose(1, 2);  // (B, T, dim)
  // Sinusoidal timestep features in float, then the model's dtype.
  auto half = c.freq_dim / 2;
  auto freqs =
      ::torch::exp(::torch::arange(half, ::torch::dtype(::torch::kFloat).device(x.device())) *
                   (-std::log(10000.0) / double(half)));
  auto args = t.to(::torch::kFloat).unsqueeze(1) * freqs.unsqueeze(0);
  auto sinus = ::torch::cat({args.cos(), args.sin()}, 1).to(x.scalar_type());
  auto e = time_out(F::silu(time_in(sinus)));                 // (B, dim)
  auto e0 = time_projection(F::silu(e)).view({b, 6, c.dim});  // (B, 6, dim)
  auto ctx = text_out(F::gelu(text_in(context), F::GELUFuncOptions().approximate("tanh")));
  for (auto& block : *blocks) tokens = block->as<DiTBlockImpl>()->forward(tokens, e0, ctx);
  auto m = (head_modulation + e.unsqueeze(1)).chunk(2, 1);
  auto out = head(head_norm(tokens) * (1 + m[1]) + m[0]);  // (B, T, pf*ph*pw*C)
  out = out.view({b, f, h, w, c.patch[0], c.patch[1], c.patch[2], c.latent_channels});
  return out.permute({0, 7, 1, 4, 2, 5, 3, 6})
      .reshape({b, c.latent_channels, f * c.patch[0], h * c.patch[1], w * c.patch[2]});
}

void MiniDiTImpl::to_lora(std::int64_t rank, double alpha) {
  for (auto& p : parameters()) p.set_requires_grad(false);
  for (auto& block : *blocks) {
    auto* b = block->as<DiTBlockImpl>();
    for (auto* attn : {b->self_attn.get(), b->cross_attn.get()})
      for (auto* proj : {attn->q.get(), attn->k.get(), attn->v.get(), attn->o.get()})
        proj->enable_lora(rank, alpha);
  }
}

namespace {
struct TextLayerImpl : ::torch::nn::Module {
  explicit TextLayerImpl(const Config& c) {
    norm1 = register_module("norm1",
                            ::torch::nn::LayerNorm(::torch::nn::LayerNormOptions({c.text_dim})));
    norm2 = register_module("norm2",
                            ::torch::nn::LayerNorm(::torch::nn::LayerNormOptions({c.text_dim})));
    attn = register_module("attn", Attention(c.text_dim, c.text_heads));
    fc1 = register_module("fc1", ::torch::nn::Linear(c.text_dim, 4 * c.text_dim));
    fc2 = register_module("fc2", ::torch::nn::Linear(4 * c.text_dim, c.text_dim));
  }
  Tensor forward(Tensor x) {
    x = x + attn(norm1(x));
    return x + fc2(F::gelu(fc1(norm2(x))));
  }
  ::torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  Attention attn{nullptr};
  ::torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(TextLayer);

::torch::nn::Conv3d conv(std::int64_t in, std::int64_t out,
                         std::vector<std::int64_t> stride = {1, 1, 1}) {
  return ::torch::nn::Conv3d(
      ::torch::nn::Conv3dOptions(in, out, 3).stride({stride[0], stride[1], stride[2]}).padding(1));
}

// Doubles space, and time causally (the first frame stays single: f -> 2f - 1).
Tensor upsample(const Tensor& x, bool time) {
  auto y = x.repeat_interleave(2, 3).repeat_interleave(2, 4);
  if (time) y = y.repeat_interleave(2, 2).narrow(2, 1, 2 * x.size(2) - 1);
  return y;
}
}  // namespace

TextEncoderImpl::TextEncoderImpl(const Config& c) {
  embed = register_module("embed", ::torch::nn::Embedding(c.vocab, c.text_dim));
  layers = register_module("layers", ::torch::nn::ModuleList());
  for (std::int64_t i = 0; i < c.text_layers; ++i) layers->push_back(TextLayer(c));
  norm =
      register_module("norm", ::torch::nn::LayerNorm(::torch::nn::LayerNormOptions({c.text_dim})));
}

Tensor TextEncoderImpl::forward(const Tensor& ids) {
  auto x = embed(ids);
  for (auto& layer : *layers) x = layer->as<TextLayerImpl>()->forward(x);
  return norm(x);
}

VaeEncoderImpl::VaeEncoderImpl(const Config& c) : z(c.latent_channels) {
  auto ch = c.vae_channels;
  body = register_module(
      "body", ::torch::nn::Sequential(conv(3, ch), ::torch::nn::SiLU(), conv(ch, ch, {2, 2, 2}),
                                      ::torch::nn::SiLU(), conv(ch, 2 * ch, {2, 2, 2}),
                                      ::torch::nn::SiLU(), conv(2 * ch, 2 * ch, {1, 2, 2}),
                                      ::torch::nn::SiLU(), conv(2 * ch, 2 * c.latent_channels)));
}

Tensor VaeEncoderImpl::forward(const Tensor& video) {
  return body->forward(video).narrow(1, 0, z);  // the mean half of (mean, logvar)
}

VaeDecoderImpl::VaeDecoderImpl(const Config& c) {
  auto ch = c.vae_channels;
  conv_in = register_module("conv_in", conv(c.latent_channels, 2 * ch));
  up1 = register_module("up1", conv(2 * ch, 2 * ch));
  up2 = register_module("up2", conv(2 * ch, ch));
  up3 = register_module("up3", conv(ch, ch));
  conv_out = register_module("conv_out", conv(ch, 3));
}

Tensor VaeDecoderImpl::forward(const Tensor& latent) {
  auto x = F::silu(conv_in(latent));
  x = F::silu(up1(upsample(x, true)));
  x = F::silu(up2(upsample(x, true)));
  x = F::silu(up3(upsample(x, false)));
  return ::torch::tanh(conv_out(x));
}

double exact_matmul_flops(const Config& c, std::int64_t tokens) {
  const double t = double(tokens), l = double(c.text_len), d = double(c.dim);
  const double patch = double(c.patch[0] * c.patch[1] * c.patch[2]);
  double f = 2 * t * (c.latent_channels * patch) * d;     // patch embedding
  f += 2 * l * (c.text_dim * d + d * d);                  // text embedding, per text token
  f += 2 * (c.freq_dim * d + d * d + d * 6 * d);          // time embedding, once
  const double block = 2 * t * d * d * 4 + 4 * t * t * d  // self: q k v o, QK^T, AV
                       + 2 * t * d * d * 2 +
                       2 * l * d * d * 2                 // cross: q o per latent, k v per text
                       + 4 * t * l * d                   // cross QK^T, AV
                       + 2 * 2 * t * d * double(c.ffn);  // FFN
  f += double(c.layers) * block;
  f += 2 * t * d * (patch * c.latent_channels);  // head
  return f;
}

void Digest::add(const Tensor& tensor) {
  auto t = tensor.detach().to(::torch::kCPU).contiguous();
  const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
  const auto n = t.numel() * static_cast<std::int64_t>(t.element_size());
  for (std::int64_t i = 0; i < n; ++i) h_ = (h_ ^ bytes[i]) * 1099511628211ull;
}

std::string Digest::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
  return buf;
}

}  // namespace vxperf_demo
