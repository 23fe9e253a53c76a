#include "vxperf/cost_model.h"

#include <cstdio>

namespace vxperf {
namespace {

// QK^T and AV, each a multiply-accumulate over the query width.
constexpr double kCoreAttentionFactor = 4.0;

// Dense bf16 tensor-core peaks (TFLOPS), matched as substrings in this order: "H200" must be tried
// before "H20". A device not listed gets no MFU rather than a made-up one.
struct PeakEntry {
  const char* key;
  double tflops;
};
constexpr PeakEntry kPeakTable[] = {
    {"A100", 312.0}, {"A800", 312.0}, {"H100", 989.0}, {"H800", 989.0},     {"H200", 989.0},
    {"H20", 148.0},  {"L40S", 362.0}, {"L20", 119.5},  {"RTX 4090", 165.2},
};

std::string format_g(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

}  // namespace

std::optional<AttentionWidths> usable_widths(const std::optional<AttentionWidths>& widths,
                                             bool attention_enabled) {
  if (!attention_enabled || !widths || widths->self == 0) return std::nullopt;
  return widths;
}

double linear_flops(double params, double tokens) { return 2.0 * params * tokens; }

double attention_flops(const std::optional<AttentionWidths>& widths, double tokens,
                       double text_tokens) {
  if (!widths || widths->self == 0) return 0.0;
  double total = kCoreAttentionFactor * tokens * tokens * static_cast<double>(widths->self);
  if (text_tokens != 0.0) {
    total += kCoreAttentionFactor * tokens * text_tokens * static_cast<double>(widths->cross);
  }
  return total;
}

double forward_flops(double params, const std::optional<AttentionWidths>& widths, double tokens,
                     double text_tokens) {
  return linear_flops(params, tokens) + attention_flops(widths, tokens, text_tokens);
}

std::optional<double> table_peak_tflops(std::string_view device_name) {
  for (const auto& entry : kPeakTable) {
    if (device_name.find(entry.key) != std::string_view::npos) return entry.tflops;
  }
  return std::nullopt;
}

std::optional<double> per_device_peak_tflops(std::optional<double> override_tflops,
                                             const std::optional<std::string>& device_name) {
  if (override_tflops) return override_tflops;
  if (!device_name) return std::nullopt;
  return table_peak_tflops(*device_name);
}

StepCoefficients step_coefficients(std::int64_t params, std::int64_t trainable, bool checkpointing,
                                   const std::optional<AttentionWidths>& widths,
                                   bool attention_enabled, std::optional<double> override_coef) {
  // A full backward is two more passes (input and weight gradients); frozen base weights (LoRA)
  // drop the weight-gradient pass. Everything real lands far from the 50% split.
  bool full = params == 0 || static_cast<double>(trainable) >= 0.5 * static_cast<double>(params);
  StepCoefficients c;
  c.mfu = full ? 3.0 : 2.0;
  c.hfu = c.mfu + (checkpointing ? 1.0 : 0.0);
  std::string attention;
  if (widths) {
    attention = "attn from dims (" + std::to_string(widths->modules) + " modules)";
  } else if (attention_enabled) {
    attention = "attn omitted (widths unreadable)";
  } else {
    attention = "attn omitted (disabled)";
  }
  c.reason = std::string(full ? "full" : "lora") + ", ckpt " + (checkpointing ? "on" : "off") +
             " -> " + format_g(c.mfu) + "x/" + format_g(c.hfu) + "x, " + attention;
  if (override_coef) {
    c.mfu = c.hfu = *override_coef;
    c.reason += ", overridden to " + format_g(*override_coef) + "x";
  }
  return c;
}

}  // namespace vxperf
