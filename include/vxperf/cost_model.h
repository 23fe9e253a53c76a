// The analytic cost model, as pure functions of numbers.
//
// A transformer forward over T latent tokens costs 2*P*T for its linear layers (P parameters)
// plus the core attention products QK^T and AV: 4*T^2*W_self over the latent sequence and
// 4*T*T_text*W_cross against the text, W being the summed query-projection widths.
#pragma once

#include <cstdint>
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace vxperf {

// Summed query-projection widths of a model's attention modules, split by what keys run over.
struct AttentionWidths {
  std::int64_t self = 0;
  std::int64_t cross = 0;
  std::int64_t modules = 0;
};

// Widths usable for pricing: nullopt when attention pricing is off or no self-attention was found
// (a model whose attention could not be read is priced linear-only, never guessed).
std::optional<AttentionWidths> usable_widths(const std::optional<AttentionWidths>& widths,
                                             bool attention_enabled);

// 2*P*T.
double linear_flops(double params, double tokens);
// density*4*T^2*W_self + 4*T*T_text*W_cross; 0 without widths; the cross term only with a text
// length.
double attention_flops(const std::optional<AttentionWidths>& widths, double tokens,
                       double text_tokens, double density = 1.0);
// attention_flops summed over samples of different lengths: `tokens` is the sum of their lengths
// and `tokens_squared` the sum of their squares (each weighted by how many samples had it).
double attention_flops_over(const std::optional<AttentionWidths>& widths, double tokens,
                            double tokens_squared, double text_tokens, double density = 1.0);
// Both terms: one forward over one sample.
double forward_flops(double params, const std::optional<AttentionWidths>& widths, double tokens,
                     double text_tokens, double density = 1.0);

// Whether `density` is usable as an attention density: finite, in (0, 1].
bool valid_density(double density);

// The number format a run's matmuls use, which decides the peak they are compared with.
enum class Dtype { kBf16, kFp16, kFp8, kTf32, kFp32 };

// The dtype table, one row per Dtype in its order: the name records and settings use, the other
// spellings read (torch's among them; one ending in '*' is a prefix), and the column of the peak
// table its rate is read from (fp16 runs at bf16's).
struct DtypeInfo {
  Dtype dtype;
  const char* name;
  std::array<const char*, 3> aliases;  // nullptr where there are fewer
  int peak_column;                     // 0 bf16, 1 fp8, 2 tf32, 3 fp32
};
inline constexpr std::array<DtypeInfo, 5> kDtypes = {{
    {Dtype::kBf16, "bf16", {"bfloat16", nullptr, nullptr}, 0},
    {Dtype::kFp16, "fp16", {"float16", "half", "f16"}, 0},
    {Dtype::kFp8, "fp8", {"float8*", "e4m3", "e5m2"}, 1},
    {Dtype::kTf32, "tf32", {nullptr, nullptr, nullptr}, 2},
    {Dtype::kFp32, "fp32", {"float32", "float", "f32"}, 3},
}};

// "bf16", "fp16", "fp8", "tf32", "fp32".
const char* dtype_name(Dtype dtype);
// Accepts those names and the other spellings of the table (a "torch." prefix and case
// ignored); nullopt for anything else.
std::optional<Dtype> parse_dtype(std::string_view text);

// Dense (no 2:4 sparsity) peak in TFLOPS of a device for a dtype, matched by substring in a fixed
// order; nullopt when the device is not in the table or has no figure for the dtype (an A100 has
// no fp8): no MFU rather than a guess.
std::optional<double> table_peak_tflops(std::string_view device_name, Dtype dtype = Dtype::kBf16);
// The override when given, else the table's entry for the device (nullopt without a device).
std::optional<double> per_device_peak_tflops(std::optional<double> override_tflops,
                                             const std::optional<std::string>& device_name,
                                             Dtype dtype = Dtype::kBf16);

// Training multipliers on a forward's cost: MFU counts forward + backward (3x full, 2x LoRA below
// a 50% trainable share), HFU adds the recomputed forward of gradient checkpointing.
struct StepCoefficients {
  double mfu = 3.0;
  double hfu = 3.0;
  std::string reason;  // "full, ckpt on -> 3x/4x, attn from dims (60 modules)"
};
StepCoefficients step_coefficients(std::int64_t params, std::int64_t trainable, bool checkpointing,
                                   const std::optional<AttentionWidths>& widths,
                                   bool attention_enabled, std::optional<double> override_coef);

}  // namespace vxperf
