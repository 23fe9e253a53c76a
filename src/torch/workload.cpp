// The embedded workload's models, sampler, trainer and the `vxperf demo` driver.
#include "workload.h"

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

Config tiny_config() { return Config{}; }

Config wan21_1_3b_config() {
  Config c;
  c.dim = 1536;
  c.ffn = 8960;
  c.heads = 12;
  c.layers = 30;
  c.text_len = 512;
  c.text_dim = 4096;  // umT5-XXL's width, so text_embedding has Wan's shape
  c.text_layers = 2;  // a stand-in tower, not umT5's 24 layers
  c.text_heads = 32;
  c.latent_channels = 16;
  c.vae_channels = 64;
  return c;
}

// ---- modules
// -------------------------------------------------------------------------------------

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

// ---- the demo driver
// -----------------------------------------------------------------------------

namespace vxperf::torch {
namespace {

using ::torch::Tensor;
using namespace ::vxperf_demo;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string default_out_dir() {
  std::time_t now = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "vxperf-demo-%Y%m%d-%H%M%S", std::localtime(&now));
  return buf;
}

// Wan's flow-matching schedule: sigma from 1 to 0, shifted towards the noisy end.
std::vector<double> sigmas(int steps, double shift) {
  std::vector<double> s;
  for (int i = 0; i <= steps; ++i) {
    double x = 1.0 - double(i) / steps;
    s.push_back(shift * x / (1 + (shift - 1) * x));
  }
  return s;
}

// Token ids of a prompt: a fixed random draw per prompt index (0 is the empty prompt).
Tensor prompt_ids(const Config& c, std::uint64_t seed, std::int64_t prompt, std::int64_t batch) {
  if (prompt == 0) return ::torch::zeros({batch, c.text_len}, ::torch::kLong);
  ::torch::manual_seed(seed * 7919 + prompt);
  return ::torch::randint(1, c.vocab, {batch, c.text_len}, ::torch::kLong);
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

}  // namespace

DemoResult run_demo(const DemoOptions& o) {
  // ---- options ----
  Config c;
  if (o.preset == "wan2.1-1.3b") {
    c = wan21_1_3b_config();
  } else {
    check(o.preset.empty() || o.preset == "tiny",
          "unknown preset '" + o.preset + "' (wan2.1-1.3b)");
    c = tiny_config();
  }
  if (o.dim) c.dim = o.dim;
  if (o.layers) c.layers = o.layers;
  if (o.heads) c.heads = o.heads;
  if (o.ffn) c.ffn = o.ffn;
  if (o.text_len) c.text_len = o.text_len;
  check(c.dim % c.heads == 0, "--dim must be a multiple of --heads");
  check(c.text_dim % c.text_heads == 0, "text width must be a multiple of its heads");
  check(o.width > 0 && o.height > 0 && o.width % 16 == 0 && o.height % 16 == 0,
        "--size must be WxH with multiples of 16");
  check(o.frames >= 1 && (o.frames - 1) % 4 == 0, "--frames must be 4k+1 (1, 5, 9, ...)");
  check(o.steps >= 1 && o.requests >= 0 && o.train_steps >= 0 && o.accum >= 1 && o.threads >= 1,
        "step, request, accumulation and thread counts must be positive");
  ::torch::Device device(::torch::kCPU);
  try {
    device = ::torch::Device(o.device);
  } catch (const std::exception&) {
    throw std::invalid_argument("unknown --device '" + o.device + "' (cpu, cuda, cuda:N)");
  }
  check(device.is_cpu() || device.is_cuda(), "--device must be cpu or cuda");
  if (device.is_cuda() && !::torch::cuda::is_available())
    throw std::invalid_argument("--device cuda, but this LibTorch has no usable CUDA device");
  const auto dtype = o.dtype == "bf16" ? ::torch::kBFloat16 : ::torch::kFloat;

  // ---- metrics: configured before the first engine() call ----
  DemoResult result;
  if (o.metrics) {
    result.out_dir = o.out_dir.empty() ? default_out_dir() : o.out_dir;
    std::filesystem::create_directories(result.out_dir);
    ::setenv("VIDEOX_PERF", "1", 0);
    ::setenv("VIDEOX_PERF_JSON", (result.out_dir + "/records.jsonl").c_str(), 0);
    ::setenv("VIDEOX_PERF_TRACE", (result.out_dir + "/trace.jsonl").c_str(), 0);
    auto every = std::to_string(std::max(1, o.train_steps / 3));
    ::setenv("VIDEOX_PERF_EVERY", every.c_str(), 0);
  } else {
    ::setenv("VIDEOX_PERF", "0", 1);
  }
  Engine* engine = vxperf::engine();
  // On a GPU: device events through the driver, memory peaks from the caching allocator.
  if (engine != nullptr && device.is_cuda()) use_cuda_backend();

  ::torch::set_num_threads(o.threads);
  const auto t0 = std::chrono::steady_clock::now();
  std::fprintf(
      stderr,
      "[demo] dim %lld, %lld layers, %lld heads, ffn %lld, text %lld; %dx%d px, %d frames; "
      "%s %s; metrics %s%s\n",
      (long long)c.dim, (long long)c.layers, (long long)c.heads, (long long)c.ffn,
      (long long)c.text_len, o.width, o.height, o.frames, o.device.c_str(), o.dtype.c_str(),
      engine ? "on -> " : "off", engine ? result.out_dir.c_str() : "");

  // ---- models: seeded, built on the CPU, then moved ----
  ::torch::manual_seed(o.seed);
  TextEncoder text_model(c);
  MiniDiT dit_model(c);
  VaeEncoder vae_enc_model(c);
  VaeDecoder vae_dec_model(c);
  for (::torch::nn::Module* m : std::initializer_list<::torch::nn::Module*>{
           text_model.get(), dit_model.get(), vae_enc_model.get(), vae_dec_model.get()})
    m->to(device, dtype);

  // One line per component.
  auto text = instrument(text_model, Role::kTextEncoder);
  auto dit = instrument(dit_model, Role::kTransformer);
  auto vae_enc = instrument(vae_enc_model, Role::kVaeEncode);
  auto vae_dec = instrument(vae_dec_model, Role::kVaeDecode);

  const std::int64_t lf = 1 + (o.frames - 1) / 4, lh = o.height / 8, lw = o.width / 8;
  if (engine != nullptr) engine->declare_model("transformer", read_model(*dit_model).info());

  // ---- inference ----
  Tensor video;
  {
    ::torch::NoGradGuard no_grad;
    dit_model->eval();
    const auto sched = sigmas(o.steps, 5.0);
    const std::int64_t cfg_batch = o.cfg ? 2 : 1;
    for (int r = 0; r < o.requests; ++r) {
      auto tr = std::chrono::steady_clock::now();
      RequestOptions ro;
      ro.device = device.is_cuda() ? device.index() < 0 ? 0 : device.index() : -1;
      ro.stream = current_stream(device);
      RequestScope request(ro);
      auto ids = prompt_ids(c, o.seed, r + 1, 1);
      if (o.cfg) ids = ::torch::cat({ids, prompt_ids(c, o.seed, 0, 1)});
      auto context = text(ids.to(device));
      ::torch::manual_seed(o.seed * 104729 + r);
      auto x = ::torch::randn({1, c.latent_channels, lf, lh, lw}).to(device, dtype);
      for (int i = 0; i < o.steps; ++i) {
        auto input = o.cfg ? ::torch::cat({x, x}) : x;
        auto t =
            ::torch::full({cfg_batch}, sched[i] * 1000.0, ::torch::dtype(dtype).device(device));
        auto v = dit(input, t, context);
        if (o.cfg) {
          auto parts = v.chunk(2, 0);
          v = parts[1] + (parts[0] - parts[1]) * o.guidance;
        }
        x = x + v * (sched[i + 1] - sched[i]);
      }
      video = vae_dec(x);
      if (device.is_cuda()) ::torch::cuda::synchronize();
      std::fprintf(
          stderr, "[demo] request %d/%d: video %s in %.2f s\n", r + 1, o.requests,
          [&] {
            std::string s;
            for (auto d : video.sizes()) s += (s.empty() ? "" : "x") + std::to_string(d);
            return s;
          }()
              .c_str(),
          seconds_since(tr));
    }
  }

  // ---- training ----
  if (o.train_steps > 0) {
    auto tt = std::chrono::steady_clock::now();
    dit_model->train();
    if (o.lora) dit_model->to_lora(o.lora_rank, double(o.lora_rank));
    dit_model->to(device, dtype);  // the adapters were created on the CPU
    auto reading = read_model(*dit_model);
    if (Trainer* t = trainer()) {
      t->register_model(reading.info());
      if (device.is_cuda())
        t->set_device(device.index() < 0 ? 0 : device.index(), current_stream(device));
    }
    std::vector<Tensor> params;
    for (auto& p : dit_model->parameters())
      if (p.requires_grad()) params.push_back(p);
    ::torch::optim::AdamW opt(params, ::torch::optim::AdamWOptions(1e-4).weight_decay(0.01));
    // Buckets: the video size, an image, a shorter clip at half width (token counts differ).
    struct Bucket {
      std::int64_t w, h, f;
    };
    std::vector<Bucket> buckets{
        {o.width, o.height, o.frames},
        {o.width, o.height, 1},
        {std::max<std::int64_t>(16, o.width / 32 * 16), o.height, std::max(1, o.frames - 4)}};
    double last_loss = 0;
    for (int step = 0; step < o.train_steps; ++step) {
      for (int micro = 0; micro < o.accum; ++micro) {
        MicroStep micro_scope;
        const auto& bk = buckets[(step * o.accum + micro) % buckets.size()];
        ::torch::manual_seed(o.seed * 15485863 + step * o.accum + micro + 1);
        auto pixels = (::torch::rand({1, 3, bk.f, bk.h, bk.w}) * 2 - 1).to(device, dtype);
        auto noise = ::torch::randn({1, c.latent_channels, 1 + (bk.f - 1) / 4, bk.h / 8, bk.w / 8})
                         .to(device, dtype);
        auto sigma = ::torch::rand({1}).to(device, dtype);
        auto ids = prompt_ids(c, o.seed, 1000 + step * o.accum + micro, 1).to(device);
        Tensor latent, context;
        {
          ::torch::NoGradGuard no_grad;
          latent = vae_enc(pixels);
          context = text(ids);
        }
        auto s = sigma.view({1, 1, 1, 1, 1});
        auto noisy = latent * (1 - s) + noise * s;
        auto pred = dit(noisy, sigma * 1000, context);
        auto loss = F::mse_loss(pred.to(::torch::kFloat), (noise - latent).to(::torch::kFloat)) /
                    double(o.accum);
        {
          Backward backward;
          loss.backward();
        }
        last_loss = loss.item<double>() * o.accum;
        const bool last = micro == o.accum - 1;
        if (last) {
          Clip clip;
          ::torch::nn::utils::clip_grad_norm_(params, 1.0);
        }
        {
          OptimizerStep step_scope(&opt, last);
          if (last) {
            opt.step();
            opt.zero_grad();
          }
        }
      }
    }
    if (device.is_cuda()) ::torch::cuda::synchronize();
    std::fprintf(stderr,
                 "[demo] training: %d steps x %d micro (%s, %lld of %lld params trained), "
                 "last loss %.4f, %.2f s\n",
                 o.train_steps, o.accum, o.lora ? "lora" : "full", (long long)reading.trainable,
                 (long long)reading.params, last_loss, seconds_since(tt));
  }

  // ---- digest: the last video and every transformer weight ----
  Digest digest;
  if (video.defined()) digest.add(video);
  for (const auto& p : dit_model->named_parameters()) digest.add(p.value());
  result.digest = digest.hex();
  vxperf::shutdown();
  result.seconds = seconds_since(t0);
  std::fprintf(stderr, "[demo] done in %.2f s\n", result.seconds);
  return result;
}

}  // namespace vxperf::torch
