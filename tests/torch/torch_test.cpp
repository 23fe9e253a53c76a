// The LibTorch adapter: model reading, token inference, wrappers, and the embedded workload.
#include "vxperf/torch.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace vt = vxperf::torch;
namespace nn = ::torch::nn;

namespace {

// ---- TorchScript conformance models: inspect agrees with the reference's reading ----------------

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, ReadingMatchesReference) {
  std::string base = std::string(VXPERF_MODELS_DIR) + "/" + GetParam();
  std::ifstream in(base + ".expected.json");
  ASSERT_TRUE(in) << base;
  auto expected = nlohmann::json::parse(in);
  auto r = vt::read_model_file(base + ".pt");
  EXPECT_EQ(r.params, expected["params"].get<std::int64_t>());
  EXPECT_EQ(r.attention.self, expected["attn"]["self"].get<std::int64_t>());
  EXPECT_EQ(r.attention.cross, expected["attn"]["cross"].get<std::int64_t>());
  EXPECT_EQ(r.attention.modules, expected["attn"]["modules"].get<std::int64_t>());
  EXPECT_EQ(r.text_tokens, expected["text_tokens"].get<std::int64_t>());
  // The JSON form carries the same numbers.
  auto j = nlohmann::json::parse(vt::reading_json(r));
  EXPECT_EQ(j["params"], expected["params"]);
  EXPECT_EQ(j["attn"], expected["attn"]);
  EXPECT_EQ(j["text_tokens"], expected["text_tokens"]);
}

INSTANTIATE_TEST_SUITE_P(Models, Conformance,
                         ::testing::Values("wan_like", "diffusers_like", "hunyuan_like",
                                           "zimage_like"));

TEST(ScriptReading, WanPatchSizeSurvivesScripting) {
  auto r = vt::read_model_file(std::string(VXPERF_MODELS_DIR) + "/wan_like.pt");
  ASSERT_TRUE(r.patch_size.has_value());
  EXPECT_EQ(*r.patch_size, (vt::PatchSize{1, 2, 2}));
  EXPECT_EQ(r.trainable, r.params);
}

TEST(ScriptReading, ShardedCountsAreMultipliedBack) {
  auto path = std::string(VXPERF_MODELS_DIR) + "/diffusers_like.pt";
  auto one = vt::read_model_file(path);
  auto sharded = vt::read_model_file(path, {4, true});
  auto unsharded = vt::read_model_file(path, {4, false});
  EXPECT_EQ(sharded.params, 4 * one.params);
  EXPECT_EQ(sharded.trainable, 4 * one.trainable);
  EXPECT_EQ(unsharded.params, one.params);
  // Widths are logical: sharding does not narrow a projection.
  EXPECT_EQ(sharded.attention.self, one.attention.self);
}

TEST(ScriptReading, MissingFileThrowsOneLine) {
  try {
    vt::read_model_file("/nonexistent/model.pt");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

// ---- C++ frontend modules, one per naming convention --------------------------------------------

struct AttnImpl : nn::Module {
  AttnImpl(int64_t dim, const std::vector<std::string>& names, int64_t mult = 1) {
    for (const auto& n : names) register_module(n, nn::Linear(dim, dim * mult));
  }
};
std::shared_ptr<AttnImpl> attn(int64_t dim, const std::vector<std::string>& names,
                               int64_t mult = 1) {
  return std::make_shared<AttnImpl>(dim, names, mult);
}

struct BlockImpl : nn::Module {};
TORCH_MODULE(Block);

TEST(ModuleReading, WanNames) {
  auto root = std::make_shared<nn::Module>();
  auto blocks = nn::ModuleList();
  for (int i = 0; i < 2; ++i) {
    auto b = Block();
    b->register_module("self_attn", attn(16, {"q", "k", "v", "o"}));
    b->register_module("cross_attn", attn(16, {"q", "k", "v", "o"}));
    blocks->push_back(b);
  }
  root->register_module("blocks", blocks);
  auto r = vt::read_model(*root);
  EXPECT_EQ(r.attention.self, 32);
  EXPECT_EQ(r.attention.cross, 32);
  EXPECT_EQ(r.attention.modules, 4);
  EXPECT_EQ(r.params, 2 * 8 * (16 * 16 + 16));
}

TEST(ModuleReading, DiffusersAttn2IsCross) {
  auto root = std::make_shared<nn::Module>();
  root->register_module("attn1", attn(8, {"to_q", "to_k", "to_v", "to_out"}));
  root->register_module("attn2", attn(8, {"to_q", "to_k", "to_v", "to_out"}));
  root->register_module("attn2_extra", attn(8, {"to_q", "to_k", "to_v"}));  // not exactly attn2
  auto r = vt::read_model(*root);
  EXPECT_EQ(r.attention.self, 16);
  EXPECT_EQ(r.attention.cross, 8);
  EXPECT_EQ(r.attention.modules, 3);
}

TEST(ModuleReading, FusedNeedsMultipleOfThreeAndSeparateWins) {
  auto root = std::make_shared<nn::Module>();
  root->register_module("a", attn(12, {"qkv"}, 3));     // 12
  root->register_module("b", attn(10, {"to_qkv"}, 2));  // 20: not a multiple of 3
  auto both = attn(6, {"q_proj", "k_proj", "v_proj"});
  both->register_module("qkv_proj", nn::Linear(6, 30));  // separate wins: 6
  root->register_module("c", both);
  root->register_module("d", attn(4, {"q", "k"}));  // no v: nothing
  auto r = vt::read_model(*root);
  EXPECT_EQ(r.attention.self, 12 + 6);
  EXPECT_EQ(r.attention.modules, 2);
}

TEST(ModuleReading, TextTowersSkippedByFullName) {
  auto root = std::make_shared<nn::Module>();
  root->register_module("token_refiner", attn(8, {"qkv"}, 3));
  root->register_module("context_refiner", attn(8, {"q_proj", "k_proj", "v_proj"}));
  root->register_module("noise_refiner", attn(8, {"q_proj", "k_proj", "v_proj"}));
  auto r = vt::read_model(*root);
  EXPECT_EQ(r.attention.self, 8);
  EXPECT_EQ(r.attention.modules, 1);
}

struct LoraImpl : nn::Module, vt::Projection {
  LoraImpl(int64_t in, int64_t out) : out_(out) {
    base = register_module("base", nn::Linear(in, out));
    for (auto& p : base->parameters()) p.set_requires_grad(false);
    down = register_module("down", nn::Linear(nn::LinearOptions(in, 2).bias(false)));
    up = register_module("up", nn::Linear(nn::LinearOptions(2, out).bias(false)));
  }
  int64_t out_features() const override { return out_; }
  nn::Linear base{nullptr}, down{nullptr}, up{nullptr};
  int64_t out_;
};
TORCH_MODULE(Lora);

struct TraitsImpl : nn::Module, vt::ModelTraits {
  int64_t text_len() const override { return 77; }
  std::optional<vt::PatchSize> patch_size() const override { return vt::PatchSize{1, 2, 2}; }
  bool gradient_checkpointing() const override { return true; }
};
TORCH_MODULE(Traits);

TEST(ModuleReading, WrappedProjectionsTraitsAndTrainable) {
  auto root = Traits();
  auto attn = std::make_shared<nn::Module>();
  attn->register_module("q", Lora(8, 8));
  attn->register_module("k", Lora(8, 8));
  attn->register_module("v", Lora(8, 8));
  root->register_module("attn", attn);
  auto r = vt::read_model(*root);
  EXPECT_EQ(r.attention.self, 8);
  EXPECT_EQ(r.params, 3 * (8 * 8 + 8 + 8 * 2 + 2 * 8));
  EXPECT_EQ(r.trainable, 3 * (8 * 2 + 2 * 8));
  EXPECT_EQ(r.text_tokens, 77);
  EXPECT_TRUE(r.checkpointing);
  auto info = r.info();
  EXPECT_EQ(info.trainable, r.trainable);
  ASSERT_TRUE(info.attention.has_value());
  EXPECT_EQ(info.text_tokens, 77);
  auto none = vt::read_model(*nn::Linear(4, 4)).info();
  EXPECT_FALSE(none.attention.has_value());
}

// ---- tokens from inputs -------------------------------------------------------------------------

TEST(Tokens, EachInputConvention) {
  auto latent = ::torch::zeros({2, 16, 3, 8, 12});
  auto t = vt::infer_tokens(latent, vt::PatchSize{1, 2, 2});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tokens, 3 * 4 * 6);
  EXPECT_EQ(t->batch, 2);
  EXPECT_FALSE(vt::infer_tokens(latent, std::nullopt));    // no patch size: unpriced
  auto seq = vt::infer_tokens(latent, std::nullopt, 100);  // explicit seq_len wins
  ASSERT_TRUE(seq);
  EXPECT_EQ(seq->tokens, 100);
  auto packed = vt::infer_tokens(::torch::zeros({3, 50, 8}), std::nullopt);
  ASSERT_TRUE(packed);
  EXPECT_EQ(packed->tokens, 50);
  EXPECT_EQ(packed->batch, 3);
  EXPECT_FALSE(vt::infer_tokens(::torch::zeros({4, 4}), vt::PatchSize{1, 2, 2}));
  EXPECT_FALSE(vt::infer_tokens(::torch::zeros({1, 2, 3, 4}), vt::PatchSize{1, 2, 2}));
}

TEST(Device, CpuBuildHasNoStreamOrPeaks) {
  EXPECT_EQ(vt::current_stream(::torch::Device(::torch::kCPU)), nullptr);
  if (!vt::cuda_build()) EXPECT_FALSE(vt::memory_peaks_provider()(0).has_value());
}

}  // namespace
