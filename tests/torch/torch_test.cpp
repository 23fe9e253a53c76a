// The LibTorch adapter: model reading, token inference, wrappers, and the embedded workload.
#include "vxperf/torch.h"

#include <ATen/record_function.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "demo/workload.h"
#include "vxperf/engine.h"
#include "vxperf/testing.h"

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

// ---- the mini DiT: reading, pricing, wrapping ---------------------------------------------------

// The tiny configuration, torch's generator seeded for the modules made from it.
vxperf_demo::Config seeded_tiny_config() {
  ::torch::manual_seed(0);
  return vxperf_demo::tiny_config();
}

TEST(MiniDiT, ReadingAndShapes) {
  auto c = seeded_tiny_config();
  vxperf_demo::MiniDiT dit(c);
  auto r = vt::read_model(*dit);
  EXPECT_EQ(r.attention.self, c.layers * c.dim);
  EXPECT_EQ(r.attention.cross, c.layers * c.dim);
  EXPECT_EQ(r.attention.modules, 2 * c.layers);
  EXPECT_EQ(r.text_tokens, c.text_len);
  EXPECT_EQ(*r.patch_size, (vt::PatchSize{1, 2, 2}));
  ::torch::NoGradGuard no_grad;
  auto x = ::torch::randn({2, c.latent_channels, 3, 8, 8});
  auto out = dit(x, ::torch::full({2}, 500.0), ::torch::randn({2, c.text_len, c.text_dim}));
  EXPECT_EQ(out.sizes(), x.sizes());
  // LoRA: adapters are trainable, the base is frozen, the projections are still read.
  dit->to_lora(4, 4.0);
  auto lora = vt::read_model(*dit);
  EXPECT_EQ(lora.attention.self, r.attention.self);
  EXPECT_EQ(lora.trainable, c.layers * 2 * 4 * (c.dim * 4 + 4 * c.dim));
  EXPECT_LT(lora.trainable * 2, lora.params);
}

// The cost model (2*P*T + 4*T^2*W_self + 4*T*L*W_cross) against the exact per-layer matmul count.
// The attention terms agree exactly; the linear term differs by precisely the parameters that do
// not run once per latent token: the text embedding and the cross-attention k/v (run per text
// token), the time embedding (once per sample), and the biases, modulation tables and norm
// weights (elementwise, not matmuls).
TEST(MiniDiT, CostModelAgainstExactMatmulCount) {
  for (auto c : {vxperf_demo::tiny_config(), vxperf_demo::wan21_1_3b_config()}) {
    if (c.dim > 512) {  // the 1.3B shape: count parameters from the formula, not a module
      c.layers = 2;
    }
    ::torch::manual_seed(0);
    vxperf_demo::MiniDiT dit(c);
    auto r = vt::read_model(*dit);
    const std::int64_t tokens = c.dim > 512 ? 32760 : 48;  // 81x480x832 -> 21x30x52; 9x64x64
    double model =
        vxperf::forward_flops(double(r.params), r.attention, double(tokens), double(r.text_tokens));
    double exact = vxperf_demo::exact_matmul_flops(c, tokens);
    // Split the parameters by how often the exact count runs them.
    double d = double(c.dim), per_text = c.text_dim * d + d * d + c.layers * 2 * d * d,
           once = c.freq_dim * d + d * d + 6 * d * d, matmul = 0;
    for (const auto& p : dit->named_parameters())
      if (p.key().size() >= 6 && p.key().substr(p.key().size() - 6) == "weight" &&
          p.value().dim() >= 2)
        matmul += double(p.value().numel());
    double elementwise = double(r.params) - matmul;
    double explained = 2.0 * (tokens - c.text_len) * per_text + 2.0 * (tokens - 1) * once +
                       2.0 * tokens * elementwise;
    EXPECT_NEAR(model - exact, explained, 1e-9 * exact);
    std::printf("dim %lld x %lld layers, %lld tokens: cost model %.4g, exact %.4g (%+.2f%%)\n",
                (long long)c.dim, (long long)c.layers, (long long)tokens, model, exact,
                100.0 * (model - exact) / exact);
  }
}

// Options of an engine at level 1 writing its lines and records to `out`.
vxperf::EngineOptions level1_into(const std::shared_ptr<vxperf::testing::MemoryOutput>& out) {
  vxperf::EngineOptions parts;
  parts.settings.level = 1;
  parts.log = out->log_fn();
  parts.sinks.push_back(out);
  return parts;
}

// A seeded tiny MiniDiT instrumented as the transformer (the one line) and declared to an engine
// at level 1 writing into `out`, and a batch of 2 inputs for it (3x8x8 latents: 48 tokens).
struct TimedDiT {
  std::shared_ptr<vxperf::testing::MemoryOutput> out =
      std::make_shared<vxperf::testing::MemoryOutput>();
  vxperf::Engine engine{level1_into(out)};
  vxperf_demo::Config c = seeded_tiny_config();
  vxperf_demo::MiniDiT model{c};
  vt::Timed<vxperf_demo::MiniDiT> dit = vt::instrument(model, vt::Role::kTransformer);
  ::torch::NoGradGuard no_grad;
  ::torch::Tensor x = ::torch::randn({2, c.latent_channels, 3, 8, 8});
  ::torch::Tensor ctx = ::torch::randn({2, c.text_len, c.text_dim});
  ::torch::Tensor t = ::torch::full({2}, 10.0);

  TimedDiT() { engine.declare_model("transformer", vt::read_model(*model).info()); }
};

TEST(Wrappers, TransformerCallIsAPricedStage) {
  TimedDiT d;
  vxperf_demo::VaeDecoder decoder(d.c);
  auto vae = vt::instrument(decoder, vt::Role::kVaeDecode);
  ::torch::Tensor plain = d.model->forward(d.x, d.t, d.ctx), timed;
  {
    vxperf::RequestScope request(d.engine);
    for (int i = 0; i < 3; ++i) timed = d.dit(d.x, d.t, d.ctx);
    vae(timed.narrow(0, 0, 1));
  }
  EXPECT_TRUE(timed.equal(plain));  // instrumentation never changes the computation
  auto history = d.out->requests();
  ASSERT_EQ(history.size(), 1u);
  std::map<std::string, std::int64_t> counts;
  for (const auto& s : history[0].stages) counts[s.name] = s.count;
  EXPECT_EQ(counts["transformer"], 3);
  EXPECT_EQ(counts["vae_dec"], 1);
  ASSERT_TRUE(history[0].dit.has_value());
  EXPECT_EQ(history[0].dit->tokens, 3 * 4 * 4);
  EXPECT_EQ(history[0].dit->batch, 2);
  EXPECT_FALSE(d.out->records().empty());
}

TEST(Wrappers, OutsideARequestWithMetricsOffIsInert) {
  // No request open and (in this test binary) no process-wide engine: nothing to time.
  auto lin = vt::instrument(nn::Linear(4, 4), vt::Role::kAux);
  auto y = lin(::torch::ones({1, 4}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, 4}));
}

TEST(Wrappers, TrainingCallsBecomePhasesOfTheMicroStepsTrainer) {
  auto out = std::make_shared<vxperf::testing::MemoryOutput>();
  vxperf::EngineOptions parts = level1_into(out);
  parts.settings.every = 2;
  vxperf::Engine engine(std::move(parts));
  vxperf::Trainer& trainer = engine.trainer();
  auto c = seeded_tiny_config();
  vxperf_demo::MiniDiT model(c);
  vxperf_demo::VaeDecoder decoder(c);
  auto dit = vt::instrument(model, vt::Role::kTransformer);
  auto vae = vt::instrument(decoder, vt::Role::kVaeEncode);  // any role: phase vae_enc
  trainer.register_model(vt::read_model(*model).info());
  int optimizer = 0;
  for (int step = 0; step < 2; ++step) {
    vxperf::MicroStep micro(&trainer);
    auto x = ::torch::randn({2, c.latent_channels, 3, 8, 8});
    auto ctx = ::torch::randn({2, c.text_len, c.text_dim});
    {
      ::torch::NoGradGuard no_grad;
      (void)vae(::torch::randn({2, c.latent_channels, 3, 8, 8}));
    }
    auto loss = dit(x, ::torch::full({2}, 10.0), ctx).pow(2).mean();
    {
      vxperf::Backward backward(&trainer);
      loss.backward();
    }
    vxperf::OptimizerStep opt(&optimizer, true, &trainer);
  }
  ASSERT_EQ(out->records().size(), 1u);
  const std::string w = out->records()[0];
  for (const char* phase : {"\"vae_enc\"", "\"fwd\"", "\"bwd\"", "\"opt\""}) {
    EXPECT_NE(w.find(phase), std::string::npos) << phase << " in " << w;
  }
  // Tokens and samples came from the wrapped forward's latent: 3x4x4 patches, batch 2.
  EXPECT_NE(w.find("\"tokens\":48.0"), std::string::npos) << w;
  EXPECT_NE(w.find("\"samples\":2.0"), std::string::npos) << w;
  // Outside any micro-step and with no training loop in the process, a call is not training.
  EXPECT_EQ(vxperf::internal::active_trainer, nullptr);
}

TEST(Wrappers, ASetSeqLenPricesThePaddedLength) {
  TimedDiT d;
  d.dit.set_seq_len(64);  // the blocks run on 64 tokens, the latent's 48 padded (Wan's seq_len)
  {
    vxperf::RequestScope request(d.engine);
    (void)d.dit(d.x, d.t, d.ctx);
  }
  auto history = d.out->requests();
  ASSERT_EQ(history.size(), 1u);
  ASSERT_TRUE(history[0].dit.has_value());
  EXPECT_EQ(history[0].dit->tokens, 64);
  EXPECT_EQ(history[0].dit->batch, 2);
}

TEST(Wrappers, PartialAndSkippedCallsArePricedAtTheirFraction) {
  TimedDiT d;
  ::torch::Tensor full, cached;
  {
    vxperf::RequestScope request(d.engine);
    full = d.dit(d.x, d.t, d.ctx);
    (void)d.dit.partial(0.5, d.x, d.t, d.ctx);             // half the blocks ran
    cached = d.dit.skip(d.x, [&] { return full + 0.0; });  // a cache hit: the residual reused
    EXPECT_TRUE(cached.equal(full));
  }
  auto history = d.out->requests();
  ASSERT_EQ(history.size(), 1u);
  ASSERT_TRUE(history[0].dit);
  const auto& priced = *history[0].dit;
  EXPECT_EQ(history[0].stages[0].count, 3);  // all three timed
  EXPECT_EQ(priced.skipped_fwd, 1);
  EXPECT_EQ(priced.effective_fwd, 1.5);
  EXPECT_EQ(priced.dtype, vxperf::Dtype::kFp32);  // read off the parameters
}

TEST(Reading, DtypeIsTheParametersMostCommon) {
  auto c = seeded_tiny_config();
  vxperf_demo::MiniDiT model(c);
  EXPECT_EQ(vt::read_model(*model).dtype, vxperf::Dtype::kFp32);
  model->to(::torch::kBFloat16);
  EXPECT_EQ(vt::read_model(*model).dtype, vxperf::Dtype::kBf16);
  EXPECT_EQ(vt::read_model(*model).info().dtype, vxperf::Dtype::kBf16);
  model->to(::torch::kHalf);
  EXPECT_EQ(vt::read_model(*model).dtype, vxperf::Dtype::kFp16);
  nn::Embedding doubles(4, 4);
  doubles->to(::torch::kDouble);
  EXPECT_FALSE(vt::read_model(*doubles).dtype);  // no peak for float64: no dtype said
}

// ---- the peak probe -----------------------------------------------------------------------------

// The probe's promises, not its speed (that is a benchmark's business): bounded by its budget,
// a positive finite rate, and a second calibration that reads the cache instead of measuring.
TEST(PeakProbe, BoundedPositiveAndCached) {
  vt::ProbeOptions options;
  options.device = "cpu";
  options.dtype = vxperf::Dtype::kFp32;
  options.budget_s = 0.3;
  options.threads = 1;
  vt::ProbeStats stats;
  std::string why;
  const int threads = ::torch::get_num_threads();
  auto t0 = std::chrono::steady_clock::now();
  auto peak = vt::probe_peak(options, &why, &stats);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(peak) << why;
  EXPECT_TRUE(std::isfinite(peak->tflops));
  EXPECT_GT(peak->tflops, 0.0);
  EXPECT_GE(stats.rounds, 1);
  EXPECT_GT(peak->gemms, 0);
  EXPECT_GE(peak->n, 256);
  EXPECT_EQ(peak->by, "libtorch");
  EXPECT_EQ(peak->device, vxperf::cpu_device_key(1));
  // No GEMM starts once the budget is spent: the overrun is at most the last sizing GEMM pair and
  // one round, plus setup.
  EXPECT_LE(peak->seconds, options.budget_s + 3 * stats.longest_s + 0.5);
  EXPECT_LE(peak->seconds, wall);
  EXPECT_EQ(::torch::get_num_threads(), threads);  // the probe's thread count is undone

  std::string dir = ::testing::TempDir() + "vxperf-torch-peak";
  std::filesystem::remove_all(dir);
  ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  auto first = vt::calibrate(options);
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->from_cache);
  auto second = vt::calibrate(options);
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->from_cache);  // read, not measured again
  EXPECT_EQ(second->peak.tflops, first->peak.tflops);
  EXPECT_TRUE(std::filesystem::exists(dir + "/vxperf/peaks.json"));
  ::unsetenv("XDG_CACHE_HOME");
}

TEST(PeakProbe, SaysWhatItCannotMeasure) {
  std::string why;
  vt::ProbeOptions fp8;
  fp8.dtype = vxperf::Dtype::kFp8;
  EXPECT_FALSE(vt::probe_peak(fp8, &why));
  EXPECT_NE(why.find("fp8"), std::string::npos);
  vt::ProbeOptions tf32;
  tf32.dtype = vxperf::Dtype::kTf32;
  EXPECT_FALSE(vt::probe_peak(tf32, &why));
  EXPECT_NE(why.find("tf32"), std::string::npos);
  vt::ProbeOptions bad;
  bad.device = "tpu:0";
  EXPECT_FALSE(vt::probe_peak(bad, &why));
  if (!::torch::cuda::is_available()) {
    vt::ProbeOptions gpu;
    gpu.device = "cuda:0";
    EXPECT_FALSE(vt::probe_peak(gpu, &why));
    EXPECT_NE(why.find("CUDA"), std::string::npos) << why;
  }
}

TEST(Digest, HashesBytes) {
  vxperf_demo::Digest a, b, c;
  a.add(::torch::arange(10, ::torch::kFloat));
  b.add(::torch::arange(10, ::torch::kFloat));
  c.add(::torch::arange(10, ::torch::kFloat) + 1e-6);
  EXPECT_EQ(a.hex(), b.hex());
  EXPECT_NE(a.hex(), c.hex());
  EXPECT_EQ(a.hex().size(), 16u);
}

}  // namespace

// ---- torch profiler ranges ----------------------------------------------------------------------

static std::vector<std::string>* g_ranges = nullptr;

static std::unique_ptr<at::ObserverContext> range_began(const at::RecordFunction& fn) {
  if (g_ranges != nullptr) g_ranges->push_back(std::string("begin ") + fn.name());
  return nullptr;
}
static void range_ended(const at::RecordFunction& fn, at::ObserverContext*) {
  if (g_ranges != nullptr) g_ranges->push_back(std::string("end ") + fn.name());
}

TEST(ProfilerRanges, RequestsAndStagesAreUserScopeRangesWhileAProfilerRecords) {
  auto out = std::make_shared<vxperf::testing::MemoryOutput>();
  vxperf::EngineOptions parts = level1_into(out);
  parts.observers.push_back(vt::profiler_ranges());
  vxperf::Engine engine(std::move(parts));
  std::vector<std::string> got;
  g_ranges = &got;
  {  // no profiler: nothing opened
    vxperf::RequestScope request(engine);
    vxperf::StageScope s(vxperf::kTextEncoder);
  }
  EXPECT_TRUE(got.empty());
  // What a profiler does: a callback on USER_SCOPE ranges (record_function's scope).
  auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&range_began, &range_ended).scopes({at::RecordScope::USER_SCOPE}));
  {
    vxperf::RequestScope request(engine);
    { vxperf::StageScope s(vxperf::kTextEncoder); }
    { vxperf::StageScope s(vxperf::kTransformer, 16, 1); }
  }
  at::removeCallback(handle);
  g_ranges = nullptr;
  EXPECT_EQ(got,
            (std::vector<std::string>{"begin request 1", "begin text_encoder", "end text_encoder",
                                      "begin transformer", "end transformer", "end request 1"}));
  EXPECT_EQ(out->requests().size(), 2u);
}
