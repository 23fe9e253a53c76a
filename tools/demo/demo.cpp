// The `vxperf demo` driver: the workload's models run as an instrumented program would.
#include "demo/demo.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "demo/workload.h"
#include "vxperf/config.h"
#include "vxperf/presets.h"
#include "vxperf/vxperf.h"

namespace vxperf::demo {
namespace {

namespace F = ::torch::nn::functional;
using ::torch::Tensor;
using namespace ::vxperf_demo;
using namespace ::vxperf::torch;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A new run folder under ./vxperf-demo, named after the time (with a suffix when two runs start
// within the same second).
std::string new_run_dir() {
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "run-%Y%m%d-%H%M%S", std::localtime(&now));
  std::string base = std::string("vxperf-demo/") + stamp;
  std::string dir = base;
  for (int n = 2; std::filesystem::exists(dir); ++n) dir = base + "-" + std::to_string(n);
  return dir;
}

// The run's folder, made and checked before any work: a folder holding another run's files is
// refused (two runs' records must never mix), and one that cannot be written is said at once.
std::string prepare_out_dir(const std::string& requested) {
  std::string dir = requested.empty() ? new_run_dir() : requested;
  for (const char* name : {"records.jsonl", "trace.jsonl"}) {
    if (std::filesystem::exists(std::filesystem::path(dir) / name)) {
      throw std::invalid_argument("--out " + dir + " already holds a run (" + name +
                                  "); give a new folder");
    }
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || ::access(dir.c_str(), W_OK) != 0) {
    throw std::invalid_argument("--out " + dir + " cannot be written" +
                                (error ? ": " + error.message() : std::string()));
  }
  return dir;
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
Tensor prompt_ids(const vxperf_demo::Config& c, std::uint64_t seed, std::int64_t prompt,
                  std::int64_t batch) {
  if (prompt == 0) return ::torch::zeros({batch, c.text_len}, ::torch::kLong);
  ::torch::manual_seed(seed * 7919 + prompt);
  return ::torch::randint(1, c.vocab, {batch, c.text_len}, ::torch::kLong);
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

}  // namespace

Result run(const Options& o) {
  // ---- options ----
  vxperf_demo::Config c = tiny_config();
  if (!o.preset.empty()) {
    auto preset = dit_preset(o.preset);
    if (!preset) {
      std::string names;
      for (const auto& n : dit_preset_names()) names += (names.empty() ? "" : ", ") + n;
      throw std::invalid_argument("unknown preset '" + o.preset + "' (known: " + names + ")");
    }
    c = config_from(*preset);
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

  // ---- metrics: configured in code before the first use of the engine; the VIDEOX_PERF_*
  // variables still win, so a user can redirect the demo as any other program ----
  Result result;
  vxperf::Config config;
  if (o.metrics) {
    result.out_dir = prepare_out_dir(o.out_dir);
    const char* level = std::getenv("VIDEOX_PERF");
    if (level == nullptr || *level == '\0') config.level = 1;  // on unless the variable says
    config.settings.json_path = result.out_dir + "/records.jsonl";
    config.settings.trace_path = result.out_dir + "/trace.jsonl";
    config.settings.every = std::max(1, o.train_steps / 3);
    // MFU against what this device really reaches (a CPU is in no table): measured once, then
    // read from the cache. VIDEOX_PERF_PEAK_TFLOPS=<number> still wins.
    config.settings.measure_peak = true;
  } else {
    config.level = 0;
  }
  configure(std::move(config));
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
  ModelInfo dit_info = read_model(*dit_model).info();
  if (engine != nullptr) engine->declare_model(role_name(Role::kTransformer), dit_info);
  // Before any timed work: the probe must not land inside a request or a step.
  if (auto peak = use_measured_peak(o.device, dit_info.dtype.value_or(Dtype::kBf16))) {
    char how[64];
    if (peak->from_cache) {
      std::snprintf(how, sizeof how, "from the cache");
    } else {
      std::snprintf(how, sizeof how, "measured in %.1f s, now cached", peak->peak.seconds);
    }
    std::fprintf(stderr, "[demo] peak: %.4g TFLOPS %s on %s (%s)\n", peak->peak.tflops,
                 dtype_name(peak->peak.dtype), peak->peak.device.c_str(), how);
  }

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
      // The sampler's steps: one DiT call each, guidance batched into it.
      ro.denoising_steps = o.steps;
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
  if (engine != nullptr) {
    std::fprintf(stderr, "[demo] records: %s/records.jsonl  trace: %s/trace.jsonl\n",
                 result.out_dir.c_str(), result.out_dir.c_str());
  }
  return result;
}

}  // namespace vxperf::demo
