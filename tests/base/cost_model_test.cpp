#include "vxperf/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace vxperf {
namespace {

// Wan2.1 T2V-1.3B: 30 blocks, each a self- and a cross-attention of query width 1536.
constexpr std::int64_t kWanParams = 1418996800;
const AttentionWidths kWanWidths{30 * 1536, 30 * 1536, 60};
constexpr double kWanTextTokens = 512;
// 832x480 at 81 frames: latent 21x60x104 (VAE 4x8x8), patch 1x2x2 -> 21*30*52 tokens.
constexpr double kWanTokens = 21.0 * 30 * 52;

TEST(CostModel, Wan13BForwardAt832x480x81) {
  EXPECT_EQ(kWanTokens, 32760);
  double forward = forward_flops(kWanParams, kWanWidths, kWanTokens, kWanTextTokens);
  EXPECT_NEAR(forward, 2.9388e14, 0.00005e14);
  double attention = attention_flops(kWanWidths, kWanTokens, kWanTextTokens);
  EXPECT_NEAR(attention / forward, 0.684, 0.0005);
  // The two terms, exactly.
  EXPECT_EQ(linear_flops(kWanParams, kWanTokens), 2.0 * kWanParams * kWanTokens);
  EXPECT_EQ(attention, 4.0 * kWanTokens * kWanTokens * 46080 + 4.0 * kWanTokens * 512 * 46080);
}

TEST(CostModel, AttentionToggleAndMissingWidths) {
  EXPECT_FALSE(usable_widths(kWanWidths, /*attention_enabled=*/false));
  EXPECT_FALSE(usable_widths(AttentionWidths{0, 1536, 1}, true));
  EXPECT_FALSE(usable_widths(std::nullopt, true));
  ASSERT_TRUE(usable_widths(kWanWidths, true));
  EXPECT_EQ(attention_flops(std::nullopt, 1000, 512), 0.0);
  // Without a text length the cross term is dropped.
  EXPECT_EQ(attention_flops(kWanWidths, 10, 0), 4.0 * 10 * 10 * 46080);
}

TEST(CostModel, PeakTableMatchesBySubstringInOrder) {
  EXPECT_EQ(table_peak_tflops("NVIDIA H100 80GB HBM3"), 989.0);
  EXPECT_EQ(table_peak_tflops("NVIDIA H200"), 989.0);  // not the H20 entry
  EXPECT_EQ(table_peak_tflops("NVIDIA H20"), 148.0);
  EXPECT_EQ(table_peak_tflops("NVIDIA A100-SXM4-80GB"), 312.0);
  EXPECT_EQ(table_peak_tflops("NVIDIA GeForce RTX 4090"), 165.2);
  EXPECT_EQ(table_peak_tflops("NVIDIA L20"), 119.5);
  EXPECT_FALSE(table_peak_tflops("Tesla V100-SXM2-32GB"));
  EXPECT_EQ(per_device_peak_tflops(500.0, std::string("NVIDIA H100")), 500.0);
  EXPECT_FALSE(per_device_peak_tflops(std::nullopt, std::nullopt));
}

TEST(CostModel, PeakTablePerDtype) {
  // bf16 and fp16 share the reference's figures; the others are the dense datasheet figures.
  EXPECT_EQ(table_peak_tflops("NVIDIA H100 80GB HBM3", Dtype::kFp16), 989.0);
  EXPECT_EQ(table_peak_tflops("NVIDIA H100 80GB HBM3", Dtype::kFp8), 1979.0);
  EXPECT_EQ(table_peak_tflops("NVIDIA H100 80GB HBM3", Dtype::kTf32), 494.5);
  EXPECT_EQ(table_peak_tflops("NVIDIA H100 80GB HBM3", Dtype::kFp32), 67.0);
  EXPECT_EQ(table_peak_tflops("NVIDIA H200", Dtype::kFp8), 1979.0);
  EXPECT_EQ(table_peak_tflops("NVIDIA H20", Dtype::kFp8), 296.0);
  EXPECT_EQ(table_peak_tflops("NVIDIA A100-SXM4-80GB", Dtype::kTf32), 156.0);
  EXPECT_EQ(table_peak_tflops("NVIDIA L40S", Dtype::kFp8), 733.0);
  EXPECT_EQ(table_peak_tflops("NVIDIA GeForce RTX 4090", Dtype::kFp32), 82.6);
  // A device without the format has no figure, and no other entry is tried in its place.
  EXPECT_FALSE(table_peak_tflops("NVIDIA A100-SXM4-80GB", Dtype::kFp8));
  EXPECT_FALSE(table_peak_tflops("NVIDIA A800 80GB PCIe", Dtype::kFp8));
  EXPECT_FALSE(table_peak_tflops("cpu", Dtype::kFp32));
  EXPECT_EQ(per_device_peak_tflops(std::nullopt, std::string("NVIDIA L20"), Dtype::kFp32), 59.8);
  EXPECT_EQ(per_device_peak_tflops(2.5, std::string("NVIDIA L20"), Dtype::kFp8), 2.5);
}

TEST(CostModel, DtypeNames) {
  EXPECT_EQ(parse_dtype("bf16"), Dtype::kBf16);
  EXPECT_EQ(parse_dtype("torch.bfloat16"), Dtype::kBf16);
  EXPECT_EQ(parse_dtype(" Half "), Dtype::kFp16);
  EXPECT_EQ(parse_dtype("float8_e4m3fn"), Dtype::kFp8);
  EXPECT_EQ(parse_dtype("TF32"), Dtype::kTf32);
  EXPECT_EQ(parse_dtype("float32"), Dtype::kFp32);
  EXPECT_EQ(parse_dtype("f32"), Dtype::kFp32);
  EXPECT_FALSE(parse_dtype("int8"));
  EXPECT_FALSE(parse_dtype(""));
  for (Dtype d : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8, Dtype::kTf32, Dtype::kFp32}) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d);
  }
}

TEST(CostModel, AttentionDensityScalesTheSelfTermOnly) {
  double full = attention_flops(kWanWidths, kWanTokens, kWanTextTokens);
  double causal = attention_flops(kWanWidths, kWanTokens, kWanTextTokens, 0.5);
  double self = 4.0 * kWanTokens * kWanTokens * 46080;
  double cross = 4.0 * kWanTokens * 512 * 46080;
  EXPECT_EQ(full, self + cross);
  EXPECT_EQ(causal, self * 0.5 + cross);
  EXPECT_EQ(forward_flops(kWanParams, kWanWidths, kWanTokens, kWanTextTokens, 0.25),
            linear_flops(kWanParams, kWanTokens) + self * 0.25 + cross);
  EXPECT_TRUE(valid_density(1.0));
  EXPECT_TRUE(valid_density(0.01));
  EXPECT_FALSE(valid_density(0.0));
  EXPECT_FALSE(valid_density(1.5));
  EXPECT_FALSE(valid_density(std::nan("")));
}

TEST(CostModel, StepCoefficients) {
  auto full = step_coefficients(100, 100, true, kWanWidths, true, std::nullopt);
  EXPECT_EQ(full.mfu, 3.0);
  EXPECT_EQ(full.hfu, 4.0);
  EXPECT_EQ(full.reason, "full, ckpt on -> 3x/4x, attn from dims (60 modules)");
  auto lora = step_coefficients(1000, 4, false, std::nullopt, true, std::nullopt);
  EXPECT_EQ(lora.mfu, 2.0);
  EXPECT_EQ(lora.hfu, 2.0);
  EXPECT_EQ(lora.reason, "lora, ckpt off -> 2x/2x, attn omitted (widths unreadable)");
  auto split = step_coefficients(1000, 500, false, std::nullopt, false, std::nullopt);
  EXPECT_EQ(split.reason, "full, ckpt off -> 3x/3x, attn omitted (disabled)");
  auto overridden = step_coefficients(1000, 4, true, std::nullopt, true, 2.5);
  EXPECT_EQ(overridden.mfu, 2.5);
  EXPECT_EQ(overridden.hfu, 2.5);
  EXPECT_EQ(overridden.reason,
            "lora, ckpt on -> 2x/3x, attn omitted (widths unreadable), overridden to 2.5x");
}

TEST(CostModel, MfuIsAgainstPeakTimesWorld) {
  // 8 H100s: the job rate is compared with 8 x 989.
  auto peak = per_device_peak_tflops(std::nullopt, std::string("NVIDIA H100 80GB HBM3"));
  ASSERT_TRUE(peak);
  EXPECT_DOUBLE_EQ(4000.0 / (*peak * 8), 4000.0 / 7912.0);
}

}  // namespace
}  // namespace vxperf
