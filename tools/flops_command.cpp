#include <algorithm>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/analysis.h"
#include "vxperf/cost_model.h"

namespace vxperf::cli {

namespace {
int run(int argc, char** argv);
}  // namespace

const Command kFlopsCommand = {
    "flops", run,
    "usage: vxperf flops (--preset NAME | --dim D --ffn F --heads H --layers L) --size WxH\n"
    "                    [--frames N] [--batch B] [--no-cfg] [--steps S]\n"
    "                    [--peak TFLOPS | --device NAME [--dtype DTYPE]] [--devices N]\n"
    "                    [--mfu FRACTION] [--density D] [--skip-ratio R] [--json]\n\n"
    "Parameters, tokens and FLOPs of a Wan2.1-style DiT: FLOPs per forward split into linear,\n"
    "self-attention and cross-attention, the attention share, FLOPs per request and the ideal\n"
    "time at a device's peak (and at a given MFU).\n\n"
    "  --preset NAME        wan2.1-t2v-1.3b or wan2.1-t2v-14b (explicit dims below override it)\n"
    "  --dim, --ffn, --heads, --layers   model dimensions\n"
    "  --text-len N         text tokens (512)      --text-dim N   text embedding width (4096)\n"
    "  --channels N         latent channels (16)   --patch TxHxW  patch size (1x2x2)\n"
    "  --vae-stride TxHxW   VAE compression (4x8x8)\n"
    "  --size WxH           video width x height in pixels (required)\n"
    "  --frames N           video frames (81)\n"
    "  --batch B            prompts per request (1)\n"
    "  --no-cfg             one forward per step instead of two (classifier-free guidance)\n"
    "  --steps S            denoising steps (50)\n"
    "  --peak TFLOPS        dense peak per device   --device NAME  take the peak from the table\n"
    "  --dtype DTYPE        the table's peak for bf16 (default), fp16, fp8, tf32 or fp32\n"
    "  --density D          share of the self-attention square computed, (0, 1] (causal ~0.5)\n"
    "  --skip-ratio R       share of the forwards a cache skips, [0, 1): priced at nothing\n"
    "  --devices N          devices sharing the work (1)\n"
    "  --mfu FRACTION       assumed utilization, e.g. 0.4, for a realistic time\n"
    "  --json               print one JSON object\n"
    "  --list-presets       print the preset names\n",
    "parameters, tokens, FLOPs and ideal time of a Wan2.1-style DiT"};

namespace {

constexpr std::int64_t kMaxDim = 1 << 20;

// "AxB" or "AxBxC" into whole positive numbers.
std::vector<std::int64_t> parse_dims(const std::string& option, const std::string& text,
                                     std::size_t count) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (true) {
    std::size_t x = text.find('x', start);
    std::string part = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    out.push_back(parse_int(option, part, 1, kMaxDim));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  if (out.size() != count) {
    throw UsageError{option + " takes " + (count == 2 ? "WxH" : "TxHxW") + ", not '" + text + "'"};
  }
  return out;
}

// Each --preset's dimensions, which explicit ones override wherever they appear.
bool apply_presets(int argc, char** argv, analysis::DitDims& dims) {
  bool have_preset = false;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) != "--preset") continue;
    auto preset = analysis::dit_preset(argv[i + 1]);
    if (!preset) {
      std::string names;
      for (const auto& n : analysis::dit_preset_names()) names += (names.empty() ? "" : ", ") + n;
      throw UsageError{"unknown preset '" + std::string(argv[i + 1]) + "' (known: " + names + ")"};
    }
    dims = *preset;
    have_preset = true;
  }
  return have_preset;
}

int run(int argc, char** argv) {
  analysis::DitDims dims;
  analysis::FlopsQuery query;
  query.frames = 81;
  bool json = false, have_size = false;
  bool have_preset = apply_presets(argc, argv, dims);
  std::optional<std::string> device;
  // The whole-number options: where each goes and its range.
  const struct {
    const char* name;
    std::int64_t* to;
    std::int64_t min, max;
  } whole[] = {
      {"--dim", &dims.dim, 1, kMaxDim},
      {"--ffn", &dims.ffn, 1, kMaxDim},
      {"--heads", &dims.heads, 1, kMaxDim},
      {"--layers", &dims.layers, 1, 10000},
      {"--text-len", &dims.text_len, 0, kMaxDim},
      {"--text-dim", &dims.text_dim, 1, kMaxDim},
      {"--channels", &dims.latent_channels, 1, 4096},
      {"--frames", &query.frames, 1, kMaxDim},
      {"--batch", &query.batch, 1, 1 << 20},
      {"--steps", &query.steps, 1, 1 << 20},
  };
  for (Args args(argc, argv); args.next();) {
    auto option = std::find_if(std::begin(whole), std::end(whole),
                               [&](const auto& o) { return args.is(o.name); });
    if (option != std::end(whole)) {
      *option->to = args.integer(option->min, option->max);
    } else if (args.is("--list-presets")) {
      for (const auto& n : analysis::dit_preset_names()) std::printf("%s\n", n.c_str());
      return 0;
    } else if (args.is("--json")) {
      json = true;
    } else if (args.is("--no-cfg")) {
      query.cfg = false;
    } else if (args.is("--cfg")) {
      query.cfg = true;
    } else if (args.is("--preset")) {
      args.value();  // applied above
    } else if (args.is("--patch")) {
      auto p = parse_dims(args.arg(), args.value(), 3);
      dims.patch_t = p[0], dims.patch_h = p[1], dims.patch_w = p[2];
    } else if (args.is("--vae-stride")) {
      auto v = parse_dims(args.arg(), args.value(), 3);
      dims.vae_t = v[0], dims.vae_h = v[1], dims.vae_w = v[2];
    } else if (args.is("--size")) {
      auto s = parse_dims(args.arg(), args.value(), 2);
      query.width = s[0], query.height = s[1];
      have_size = true;
    } else if (args.is("--peak")) {
      query.peak_tflops = args.number(1e-6, 1e9);
    } else if (args.is("--device")) {
      device = args.value();
    } else if (args.is("--devices")) {
      query.devices = static_cast<int>(args.integer(1, 1 << 20));
    } else if (args.is("--dtype")) {
      std::string text = args.value();
      auto dtype = parse_dtype(text);
      if (!dtype)
        throw UsageError{"--dtype takes bf16, fp16, fp8, tf32 or fp32, not '" + text + "'"};
      query.dtype = *dtype;
    } else if (args.is("--density")) {
      query.density = args.number(1e-6, 1.0);
    } else if (args.is("--skip-ratio")) {
      query.skip_ratio = args.number(0.0, 0.999999);
    } else if (args.is("--mfu")) {
      query.mfu = args.number(1e-6, 1.0);
    } else {
      throw UsageError{"unexpected argument '" + args.arg() + "'"};
    }
  }
  if (!have_preset && (dims.dim == 0 || dims.ffn == 0 || dims.heads == 0 || dims.layers == 0)) {
    throw UsageError{"give --preset NAME or all of --dim, --ffn, --heads and --layers"};
  }
  if (!have_size) throw UsageError{"missing --size WxH"};
  if (device) {
    if (query.peak_tflops) throw UsageError{"give --peak or --device, not both"};
    query.peak_tflops = table_peak_tflops(*device, query.dtype);
    if (!query.peak_tflops) {
      throw UsageError{"device '" + *device + "' has no " + dtype_name(query.dtype) +
                       " peak in the table; give --peak TFLOPS"};
    }
  }
  if (query.mfu && !query.peak_tflops) throw UsageError{"--mfu needs --peak or --device"};
  analysis::FlopsEstimate estimate;
  try {
    estimate = analysis::estimate_flops(dims, query);
  } catch (const std::invalid_argument& e) {
    throw UsageError{e.what()};
  }
  print(json ? analysis::flops_json(dims, query, estimate) + "\n"
             : analysis::format_flops(dims, query, estimate));
  return 0;
}

}  // namespace
}  // namespace vxperf::cli
