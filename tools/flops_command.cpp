#include <cstdio>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/analysis.h"
#include "vxperf/cost_model.h"

namespace vxperf::cli {
namespace {

constexpr const char* kUsage =
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
    "  --list-presets       print the preset names\n";

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

}  // namespace

int flops_command(int argc, char** argv) {
  if (print_help_if_asked(argc, argv, kUsage)) return 0;
  analysis::DitDims dims;
  analysis::FlopsQuery query;
  query.frames = 81;
  bool json = false, have_preset = false, have_size = false;
  std::optional<std::string> device;
  try {
    // The preset first, so that explicit dimensions override it wherever they appear.
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--preset" && i + 1 < argc) {
        auto preset = analysis::dit_preset(argv[i + 1]);
        if (!preset) {
          std::string names;
          for (const auto& n : analysis::dit_preset_names())
            names += (names.empty() ? "" : ", ") + n;
          throw UsageError{"unknown preset '" + std::string(argv[i + 1]) + "' (known: " + names +
                           ")"};
        }
        dims = *preset;
        have_preset = true;
      }
    }
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--list-presets") {
        for (const auto& n : analysis::dit_preset_names()) std::printf("%s\n", n.c_str());
        return 0;
      }
      if (arg == "--json") {
        json = true;
      } else if (arg == "--no-cfg") {
        query.cfg = false;
      } else if (arg == "--cfg") {
        query.cfg = true;
      } else if (arg == "--preset") {
        next_value(i, argc, argv);  // handled above
      } else if (arg == "--dim") {
        dims.dim = parse_int(arg, next_value(i, argc, argv), 1, kMaxDim);
      } else if (arg == "--ffn") {
        dims.ffn = parse_int(arg, next_value(i, argc, argv), 1, kMaxDim);
      } else if (arg == "--heads") {
        dims.heads = parse_int(arg, next_value(i, argc, argv), 1, kMaxDim);
      } else if (arg == "--layers") {
        dims.layers = parse_int(arg, next_value(i, argc, argv), 1, 10000);
      } else if (arg == "--text-len") {
        dims.text_len = parse_int(arg, next_value(i, argc, argv), 0, kMaxDim);
      } else if (arg == "--text-dim") {
        dims.text_dim = parse_int(arg, next_value(i, argc, argv), 1, kMaxDim);
      } else if (arg == "--channels") {
        dims.latent_channels = parse_int(arg, next_value(i, argc, argv), 1, 4096);
      } else if (arg == "--patch") {
        auto p = parse_dims(arg, next_value(i, argc, argv), 3);
        dims.patch_t = p[0], dims.patch_h = p[1], dims.patch_w = p[2];
      } else if (arg == "--vae-stride") {
        auto v = parse_dims(arg, next_value(i, argc, argv), 3);
        dims.vae_t = v[0], dims.vae_h = v[1], dims.vae_w = v[2];
      } else if (arg == "--size") {
        auto s = parse_dims(arg, next_value(i, argc, argv), 2);
        query.width = s[0], query.height = s[1];
        have_size = true;
      } else if (arg == "--frames") {
        query.frames = parse_int(arg, next_value(i, argc, argv), 1, kMaxDim);
      } else if (arg == "--batch") {
        query.batch = parse_int(arg, next_value(i, argc, argv), 1, 1 << 20);
      } else if (arg == "--steps") {
        query.steps = parse_int(arg, next_value(i, argc, argv), 1, 1 << 20);
      } else if (arg == "--peak") {
        query.peak_tflops = parse_double(arg, next_value(i, argc, argv), 1e-6, 1e9);
      } else if (arg == "--device") {
        device = next_value(i, argc, argv);
      } else if (arg == "--devices") {
        query.devices = static_cast<int>(parse_int(arg, next_value(i, argc, argv), 1, 1 << 20));
      } else if (arg == "--dtype") {
        std::string text = next_value(i, argc, argv);
        auto dtype = parse_dtype(text);
        if (!dtype)
          throw UsageError{"--dtype takes bf16, fp16, fp8, tf32 or fp32, not '" + text + "'"};
        query.dtype = *dtype;
      } else if (arg == "--density") {
        query.density = parse_double(arg, next_value(i, argc, argv), 1e-6, 1.0);
      } else if (arg == "--skip-ratio") {
        query.skip_ratio = parse_double(arg, next_value(i, argc, argv), 0.0, 0.999999);
      } else if (arg == "--mfu") {
        query.mfu = parse_double(arg, next_value(i, argc, argv), 1e-6, 1.0);
      } else {
        throw UsageError{"unexpected argument '" + arg + "'"};
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
    analysis::FlopsEstimate estimate = analysis::estimate_flops(dims, query);
    std::string out = json ? analysis::flops_json(dims, query, estimate) + "\n"
                           : analysis::format_flops(dims, query, estimate);
    print(out);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "vxperf flops: %s\n", e.message.c_str());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "vxperf flops: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace vxperf::cli
