#include "vxperf/cost_model.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace vxperf {
namespace {

// QK^T and AV, each a multiply-accumulate over the query width.
constexpr double kCoreAttentionFactor = 4.0;

// Dense tensor-core peaks in TFLOPS per dtype, without 2:4 sparsity (the datasheets print the
// sparse figure with an asterisk: these are half of it). Matched as substrings in this order:
// "H200" must be tried before "H20". A missing figure (0) gives no MFU rather than a made-up one.
// Sources: NVIDIA's A100 and A800 datasheets; the H100 datasheet (SXM), also for H800 and H200,
// whose compute is the H100 SXM's; the H20, L20 and L40S product briefs; the Ada Lovelace
// architecture whitepaper, appendix A (RTX 4090, FP32 accumulate). bf16 is the reference
// module's table; fp16 equals bf16 on all of them.
struct PeakEntry {
  const char* key;
  std::array<double, 4> tflops;  // by kDtypes' peak_column: bf16, fp8, tf32, fp32; 0: none
};
constexpr PeakEntry kPeakTable[] = {
    {"A100", {312.0, 0.0, 156.0, 19.5}},      {"A800", {312.0, 0.0, 156.0, 19.5}},
    {"H100", {989.0, 1979.0, 494.5, 67.0}},   {"H800", {989.0, 1979.0, 494.5, 67.0}},
    {"H200", {989.0, 1979.0, 494.5, 67.0}},   {"H20", {148.0, 296.0, 74.0, 44.0}},
    {"L40S", {362.0, 733.0, 183.0, 91.6}},    {"L20", {119.5, 239.0, 59.8, 59.8}},
    {"RTX 4090", {165.2, 330.3, 82.6, 82.6}},
};

const DtypeInfo& info_of(Dtype dtype) { return kDtypes[static_cast<std::size_t>(dtype)]; }

constexpr bool dtype_table_in_order() {
  for (std::size_t i = 0; i < kDtypes.size(); ++i) {
    if (static_cast<std::size_t>(kDtypes[i].dtype) != i) return false;
  }
  return true;
}
static_assert(dtype_table_in_order(), "kDtypes rows must follow the Dtype enumerators");

double entry_peak(const PeakEntry& e, Dtype dtype) {
  return e.tflops[static_cast<std::size_t>(info_of(dtype).peak_column)];
}

bool spelled(std::string_view text, const char* spelling) {
  std::string_view s(spelling);
  if (!s.empty() && s.back() == '*') return text.substr(0, s.size() - 1) == s.substr(0, s.size() - 1);
  return text == s;
}

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
                       double text_tokens, double density) {
  if (!widths || widths->self == 0) return 0.0;
  double total = kCoreAttentionFactor * tokens * tokens * static_cast<double>(widths->self);
  if (density != 1.0) total *= density;
  if (text_tokens != 0.0) {
    total += kCoreAttentionFactor * tokens * text_tokens * static_cast<double>(widths->cross);
  }
  return total;
}

double attention_flops_over(const std::optional<AttentionWidths>& widths, double tokens,
                            double tokens_squared, double text_tokens, double density) {
  if (!widths || widths->self == 0) return 0.0;
  double total = kCoreAttentionFactor * tokens_squared * static_cast<double>(widths->self);
  if (density != 1.0) total *= density;
  if (text_tokens != 0.0) {
    total += kCoreAttentionFactor * tokens * text_tokens * static_cast<double>(widths->cross);
  }
  return total;
}

double forward_flops(double params, const std::optional<AttentionWidths>& widths, double tokens,
                     double text_tokens, double density) {
  return linear_flops(params, tokens) + attention_flops(widths, tokens, text_tokens, density);
}

bool valid_density(double density) {
  return std::isfinite(density) && density > 0.0 && density <= 1.0;
}

const char* dtype_name(Dtype dtype) { return info_of(dtype).name; }

std::optional<Dtype> parse_dtype(std::string_view text) {
  std::string s;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  for (const DtypeInfo& row : kDtypes) {
    if (s == row.name) return row.dtype;
    for (const char* alias : row.aliases) {
      if (alias != nullptr && spelled(s, alias)) return row.dtype;
    }
  }
  return std::nullopt;
}

std::optional<double> table_peak_tflops(std::string_view device_name, Dtype dtype) {
  for (const auto& entry : kPeakTable) {
    if (device_name.find(entry.key) != std::string_view::npos) {
      double peak = entry_peak(entry, dtype);
      if (peak > 0.0) return peak;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<double> per_device_peak_tflops(std::optional<double> override_tflops,
                                             const std::optional<std::string>& device_name,
                                             Dtype dtype) {
  if (override_tflops) return override_tflops;
  if (!device_name) return std::nullopt;
  return table_peak_tflops(*device_name, dtype);
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
