// FLOPs of a Wan2.1-style DiT from its dimensions. The cost model itself (2PT + attention) is the
// core's cost_model.h; this file only derives parameters, tokens and widths from the dims.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/strings.h"
#include "vxperf/flops.h"
#include "vxperf/cost_model.h"

namespace vxperf::analysis {

using internal::strprintf;
namespace {

using Json = nlohmann::ordered_json;

}  // namespace

// With d = dim, f = ffn, L = layers, C = latent channels, p = patch volume, E = text width,
// F = time-frequency width:
//   patch embedding   Conv3d(C -> d, kernel p) + bias          C*p*d + d
//   text embedding    Linear(E -> d), GELU, Linear(d -> d)       E*d + d + d*d + d
//   time embedding    Linear(F -> d), SiLU, Linear(d -> d)       F*d + d + d*d + d
//   time projection   SiLU, Linear(d -> 6d)                      6*d*d + 6d
//   per block         self-attn q,k,v,o (d*d + d each) + RMSNorm q,k (d each)
//                     cross-attn the same
//                     norm3 LayerNorm with affine                2d
//                     FFN Linear(d -> f), GELU, Linear(f -> d)   2*d*f + f + d
//                     modulation                                 6d
//   head              Linear(d -> C*p) + bias, modulation 2d     d*C*p + C*p + 2d
// Gives 1,418,996,800 for Wan2.1-T2V-1.3B and 14,288,491,584 for 14B; norm3's affine (2d per
// block) is needed for both to match.
std::int64_t dit_params(const DitDims& x) {
  const std::int64_t d = x.dim, f = x.ffn;
  const std::int64_t patch = x.patch_t * x.patch_h * x.patch_w;
  const std::int64_t out_channels = x.latent_channels * patch;
  std::int64_t total = 0;
  total += x.latent_channels * patch * d + d;
  total += x.text_dim * d + d + d * d + d;
  total += x.freq_dim * d + d + d * d + d;
  total += 6 * d * d + 6 * d;
  const std::int64_t attention = 4 * (d * d + d) + 2 * d;
  const std::int64_t block = 2 * attention + 2 * d + (2 * d * f + f + d) + 6 * d;
  total += x.layers * block;
  total += d * out_channels + out_channels + 2 * d;
  return total;
}

ModelInfo dit_model(const DitDims& d) {
  ModelInfo m;
  m.params = dit_params(d);
  // Every block has one self- and one cross-attention, each with query width dim.
  m.attention = AttentionWidths{d.layers * d.dim, d.layers * d.dim, 2 * d.layers};
  m.text_tokens = d.text_len;
  return m;
}

LatentShape dit_tokens(const DitDims& d, std::int64_t width, std::int64_t height,
                       std::int64_t frames) {
  if (width <= 0 || height <= 0 || frames <= 0) {
    throw std::invalid_argument("size and frames must be positive");
  }
  if (d.vae_t <= 0 || d.vae_h <= 0 || d.vae_w <= 0 || d.patch_t <= 0 || d.patch_h <= 0 ||
      d.patch_w <= 0) {
    throw std::invalid_argument("patch and VAE strides must be positive");
  }
  LatentShape s;
  // The causal VAE keeps the first frame and compresses the rest by its temporal stride.
  s.frames = 1 + (frames - 1) / d.vae_t;
  s.height = height / d.vae_h;
  s.width = width / d.vae_w;
  s.tokens = (s.frames / d.patch_t) * (s.height / d.patch_h) * (s.width / d.patch_w);
  if (s.tokens <= 0) {
    throw std::invalid_argument(strprintf(
        "%lldx%lldx%lld frames gives no tokens (patch %lldx%lldx%lld, VAE stride %lldx%lldx%lld)",
        static_cast<long long>(width), static_cast<long long>(height),
        static_cast<long long>(frames), static_cast<long long>(d.patch_t),
        static_cast<long long>(d.patch_h), static_cast<long long>(d.patch_w),
        static_cast<long long>(d.vae_t), static_cast<long long>(d.vae_h),
        static_cast<long long>(d.vae_w)));
  }
  return s;
}

FlopsEstimate estimate_flops(const DitDims& dims, const FlopsQuery& q) {
  FlopsEstimate e;
  const ModelInfo model = dit_model(dims);
  e.params = model.params;
  e.latent = dit_tokens(dims, q.width, q.height, q.frames);
  const auto params = static_cast<double>(e.params);
  const auto tokens = static_cast<double>(e.latent.tokens);
  const auto text = static_cast<double>(model.text_tokens);
  const AttentionWidths widths = *model.attention;
  AttentionWidths self_only = widths;
  self_only.cross = 0;
  e.flops_linear = linear_flops(params, tokens);
  e.flops_self_attn = attention_flops(self_only, tokens, text, q.density);
  e.flops_cross_attn = attention_flops(widths, tokens, text, q.density) - e.flops_self_attn;
  e.flops_per_forward = forward_flops(params, widths, tokens, text, q.density);
  e.attention_share =
      e.flops_per_forward > 0 ? (e.flops_self_attn + e.flops_cross_attn) / e.flops_per_forward : 0;
  e.forwards_per_request = q.batch * (q.cfg ? 2 : 1) * q.steps;
  e.computed_forwards = static_cast<double>(e.forwards_per_request);
  if (q.skip_ratio != 0.0) e.computed_forwards *= 1.0 - q.skip_ratio;
  e.flops_per_request = e.flops_per_forward * e.computed_forwards;
  if (q.peak_tflops && *q.peak_tflops > 0) {
    double peak = *q.peak_tflops * 1e12 * std::max(q.devices, 1);
    e.ideal_s = e.flops_per_request / peak;
    if (q.mfu && *q.mfu > 0) e.at_mfu_s = *e.ideal_s / *q.mfu;
  }
  return e;
}

std::string format_flops(const DitDims& d, const FlopsQuery& q, const FlopsEstimate& e) {
  std::string out;
  out += strprintf("model      dim %lld, ffn %lld, %lld heads, %lld layers, text %lld tokens\n",
                   static_cast<long long>(d.dim), static_cast<long long>(d.ffn),
                   static_cast<long long>(d.heads), static_cast<long long>(d.layers),
                   static_cast<long long>(d.text_len));
  out += strprintf("params     %lld (%.3fB)\n", static_cast<long long>(e.params),
                   static_cast<double>(e.params) / 1e9);
  out += strprintf(
      "video      %lldx%lld, %lld frames -> latent %lldx%lldx%lld -> %lldx%lldx%lld patches = "
      "%lld tokens\n",
      static_cast<long long>(q.width), static_cast<long long>(q.height),
      static_cast<long long>(q.frames), static_cast<long long>(e.latent.frames),
      static_cast<long long>(e.latent.height), static_cast<long long>(e.latent.width),
      static_cast<long long>(e.latent.frames / d.patch_t),
      static_cast<long long>(e.latent.height / d.patch_h),
      static_cast<long long>(e.latent.width / d.patch_w), static_cast<long long>(e.latent.tokens));
  out += strprintf("forward    %.4e FLOPs = linear %.4e + self-attn %.4e + cross-attn %.4e\n",
                   e.flops_per_forward, e.flops_linear, e.flops_self_attn, e.flops_cross_attn);
  out += strprintf("attention  %.1f%% of a forward", e.attention_share * 100.0);
  if (q.density != 1.0) out += strprintf(" (self-attention density %g)", q.density);
  out += "\n";
  if (q.skip_ratio != 0.0) {
    out += strprintf(
        "request    %lld forwards (batch %lld x %s x %lld steps), %g%% skipped: %.4g computed = "
        "%.4e FLOPs\n",
        static_cast<long long>(e.forwards_per_request), static_cast<long long>(q.batch),
        q.cfg ? "2 CFG" : "1 no CFG", static_cast<long long>(q.steps), q.skip_ratio * 100.0,
        e.computed_forwards, e.flops_per_request);
  } else {
    out += strprintf("request    %lld forwards (batch %lld x %s x %lld steps) = %.4e FLOPs\n",
                     static_cast<long long>(e.forwards_per_request),
                     static_cast<long long>(q.batch), q.cfg ? "2 CFG" : "1 no CFG",
                     static_cast<long long>(q.steps), e.flops_per_request);
  }
  if (e.ideal_s) {
    std::string dtype = q.dtype == Dtype::kBf16 ? "" : std::string(" ") + dtype_name(q.dtype);
    out += strprintf("ideal      %.2fs at %.1f TFLOPS%s x %d device%s (100%% MFU)\n", *e.ideal_s,
                     *q.peak_tflops, dtype.c_str(), q.devices, q.devices == 1 ? "" : "s");
  }
  if (e.at_mfu_s) out += strprintf("at MFU     %.2fs at %.1f%% MFU\n", *e.at_mfu_s, *q.mfu * 100);
  return out;
}

std::string flops_json(const DitDims& d, const FlopsQuery& q, const FlopsEstimate& e) {
  auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
  Json j;
  j["dims"] = {{"dim", d.dim},
               {"ffn", d.ffn},
               {"heads", d.heads},
               {"layers", d.layers},
               {"text_len", d.text_len},
               {"patch", {d.patch_t, d.patch_h, d.patch_w}},
               {"vae_stride", {d.vae_t, d.vae_h, d.vae_w}},
               {"latent_channels", d.latent_channels},
               {"text_dim", d.text_dim}};
  j["width"] = q.width;
  j["height"] = q.height;
  j["frames"] = q.frames;
  j["params"] = e.params;
  j["latent"] = {e.latent.frames, e.latent.height, e.latent.width};
  j["tokens"] = e.latent.tokens;
  j["flops_per_forward"] = e.flops_per_forward;
  j["flops_linear"] = e.flops_linear;
  j["flops_self_attn"] = e.flops_self_attn;
  j["flops_cross_attn"] = e.flops_cross_attn;
  j["attention_share"] = e.attention_share;
  j["batch"] = q.batch;
  j["cfg"] = q.cfg;
  j["steps"] = q.steps;
  j["forwards_per_request"] = e.forwards_per_request;
  j["flops_per_request"] = e.flops_per_request;
  j["peak_tflops"] = opt(q.peak_tflops);
  j["devices"] = q.devices;
  j["ideal_s"] = opt(e.ideal_s);
  j["mfu"] = opt(q.mfu);
  j["at_mfu_s"] = opt(e.at_mfu_s);
  j["dtype"] = dtype_name(q.dtype);
  j["attn_density"] = q.density;
  j["skip_ratio"] = q.skip_ratio;
  j["computed_forwards"] = e.computed_forwards;
  return j.dump(2);
}

}  // namespace vxperf::analysis
