// Model reading, token inference, the call scope behind the wrappers, and the CUDA hooks.
#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <torch/version.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include "vxperf/cuda_backend.h"
#include "vxperf/engine.h"
#include "vxperf/markers.h"
#include "vxperf/torch.h"

#if defined(VXPERF_TORCH_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace vxperf::torch {
namespace {

// The attention projection names, in the order they are tried for each of q, k and v.
constexpr const char* kProjections[3][3] = {
    {"q", "to_q", "q_proj"}, {"k", "to_k", "k_proj"}, {"v", "to_v", "v_proj"}};
constexpr const char* kFused[] = {"qkv", "to_qkv", "qkv_proj"};
// Text-refining attention stacks: they never see the latent sequence. Matched as whole names
// because Z-Image's `noise_refiner` does run over the latents.
constexpr const char* kTextTowers[] = {"token_refiner", "context_refiner"};

std::string lower(std::string text) {
  for (char& c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

bool in_text_tower(const std::string& lowered) {
  for (const char* tower : kTextTowers)
    if (lowered.find(tower) != std::string::npos) return true;
  return false;
}

bool is_cross(const std::string& lowered) {
  if (lowered.find("cross") != std::string::npos) return true;
  auto dot = lowered.rfind('.');
  return lowered.substr(dot == std::string::npos ? 0 : dot + 1) == "attn2";
}

// The query width of a module from its children's output widths (`width_of(name)` gives a named
// child's out_features, nullopt when there is no such child or it has none).
template <class WidthOf>
std::optional<std::int64_t> query_width(WidthOf&& width_of) {
  std::optional<std::int64_t> query;
  int found = 0;
  for (const auto& candidates : kProjections) {
    for (const char* name : candidates) {
      if (auto w = width_of(name)) {
        if (found == 0) query = w;
        ++found;
        break;
      }
    }
  }
  if (found == 3) return query;
  for (const char* name : kFused) {
    auto w = width_of(name);
    if (w && *w % 3 == 0) return *w / 3;
  }
  return std::nullopt;
}

void add_attention(AttentionWidths& widths, const std::string& name,
                   std::optional<std::int64_t> q) {
  if (!q) return;
  (is_cross(lower(name)) ? widths.cross : widths.self) += *q;
  ++widths.modules;
}

std::optional<std::int64_t> linear_width(const ::torch::nn::Module& m) {
  if (auto* linear = dynamic_cast<const ::torch::nn::LinearImpl*>(&m))
    return linear->options.out_features();
  if (auto* proj = dynamic_cast<const Projection*>(&m)) return proj->out_features();
  return std::nullopt;
}

// A TorchScript module's attribute or class constant (nn.Linear keeps out_features as a constant).
std::optional<c10::IValue> script_value(const ::torch::jit::Module& m, const std::string& name) {
  if (m.hasattr(name)) return m.attr(name);
  const auto& type = m.type();
  if (type->hasConstant(name)) return type->getConstant(name);
  return std::nullopt;
}

std::optional<PatchSize> patch_from(const c10::IValue& v) {
  if (v.isInt()) return PatchSize{1, v.toInt(), v.toInt()};
  std::vector<c10::IValue> items;
  if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) items.push_back(e);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) items.push_back(e);
  }
  if (items.size() != 3) return std::nullopt;
  PatchSize p{};
  for (int i = 0; i < 3; ++i) {
    if (!items[i].isInt()) return std::nullopt;
    p[i] = items[i].toInt();
  }
  return p;
}

std::int64_t scale(const ReadOptions& options) {
  return options.sharded && options.world_size > 1 ? options.world_size : 1;
}

// By torch's own name of the type ("BFloat16", "Half", "Float", "Float8_e4m3fn"), which the dtype
// table spells; integers and doubles have no peak to compare with.
std::optional<Dtype> dtype_of(c10::ScalarType type) { return parse_dtype(c10::toString(type)); }

// Total and trainable parameter counts, multiplied back when the model is one rank's shard, and
// the floating dtype most of the parameters are in (the one its matmuls run in).
template <class Parameters>
void count_parameters(const Parameters& parameters, const ReadOptions& options, ModelReading& r) {
  std::map<Dtype, std::int64_t> by_dtype;
  for (const auto& p : parameters) {
    r.params += p.numel();
    if (p.requires_grad()) r.trainable += p.numel();
    if (auto dtype = dtype_of(p.scalar_type())) by_dtype[*dtype] += p.numel();
  }
  r.params *= scale(options);
  r.trainable *= scale(options);
  std::int64_t most = 0;
  for (const auto& [dtype, count] : by_dtype) {
    if (count > most) {
      most = count;
      r.dtype = dtype;
    }
  }
}

}  // namespace

ModelInfo ModelReading::info() const {
  ModelInfo info;
  info.params = params;
  info.trainable = trainable;
  info.checkpointing = checkpointing;
  if (attention.self > 0) info.attention = attention;
  info.text_tokens = text_tokens;
  info.dtype = dtype;
  return info;
}

ModelReading read_model(const ::torch::nn::Module& module, const ReadOptions& options) {
  ModelReading r;
  count_parameters(module.parameters(/*recurse=*/true), options, r);
  for (const auto& item : module.named_modules(/*name_prefix=*/"", /*include_self=*/true)) {
    const auto& name = item.key();
    const auto& sub = *item.value();
    if (auto* traits = dynamic_cast<const ModelTraits*>(&sub))
      r.checkpointing = r.checkpointing || traits->gradient_checkpointing();
    if (in_text_tower(lower(name))) continue;
    auto children = sub.named_children();
    add_attention(r.attention, name,
                  query_width([&](const char* child) -> std::optional<std::int64_t> {
                    auto* found = children.find(child);
                    if (found == nullptr) return std::nullopt;
                    return linear_width(**found);
                  }));
  }
  if (auto* traits = dynamic_cast<const ModelTraits*>(&module)) {
    r.text_tokens = std::max<std::int64_t>(0, traits->text_len());
    r.patch_size = traits->patch_size();
  }
  return r;
}

ModelReading read_model(const ::torch::jit::Module& module, const ReadOptions& options) {
  ModelReading r;
  count_parameters(module.parameters(/*recurse=*/true), options, r);
  for (const auto& item : module.named_modules()) {
    const auto& sub = item.value;
    if (auto flag = script_value(sub, "gradient_checkpointing"); flag && flag->isBool())
      r.checkpointing = r.checkpointing || flag->toBool();
    if (in_text_tower(lower(item.name))) continue;
    std::map<std::string, ::torch::jit::Module> children;
    for (const auto& child : sub.named_children()) children.emplace(child.name, child.value);
    add_attention(r.attention, item.name,
                  query_width([&](const char* child) -> std::optional<std::int64_t> {
                    auto found = children.find(child);
                    if (found == children.end()) return std::nullopt;
                    auto width = script_value(found->second, "out_features");
                    if (!width || !width->isInt()) return std::nullopt;
                    return width->toInt();
                  }));
  }
  if (auto text = script_value(module, "text_len"); text && text->isInt() && text->toInt() > 0)
    r.text_tokens = text->toInt();
  if (auto patch = script_value(module, "patch_size")) r.patch_size = patch_from(*patch);
  return r;
}

ModelReading read_model_file(const std::string& path, const ReadOptions& options) {
  ::torch::jit::Module module;
  try {
    module = ::torch::jit::load(path, ::torch::Device(::torch::kCPU));
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    auto nl = what.find('\n');
    throw std::runtime_error("cannot load '" + path + "' as TorchScript: " + what.substr(0, nl));
  }
  return read_model(module, options);
}

std::string format_reading(const ModelReading& r) {
  std::ostringstream out;
  out << "params        " << r.params << "\n"
      << "trainable     " << r.trainable << "\n"
      << "attention     self " << r.attention.self << ", cross " << r.attention.cross << ", "
      << r.attention.modules << " modules\n"
      << "text tokens   " << r.text_tokens << (r.text_tokens ? "" : " (not advertised)") << "\n"
      << "patch size    ";
  if (r.patch_size) {
    out << (*r.patch_size)[0] << "x" << (*r.patch_size)[1] << "x" << (*r.patch_size)[2] << "\n";
  } else {
    out << "(not advertised)\n";
  }
  out << "checkpointing " << (r.checkpointing ? "on" : "off") << "\n";
  return out.str();
}

std::string reading_json(const ModelReading& r) {
  std::ostringstream out;
  out << "{\"params\":" << r.params << ",\"trainable\":" << r.trainable
      << ",\"attn\":{\"self\":" << r.attention.self << ",\"cross\":" << r.attention.cross
      << ",\"modules\":" << r.attention.modules << "},\"text_tokens\":" << r.text_tokens
      << ",\"patch_size\":";
  if (r.patch_size) {
    out << "[" << (*r.patch_size)[0] << "," << (*r.patch_size)[1] << "," << (*r.patch_size)[2]
        << "]";
  } else {
    out << "null";
  }
  out << ",\"checkpointing\":" << (r.checkpointing ? "true" : "false") << "}";
  return out.str();
}

std::optional<TokenShape> infer_tokens(const ::torch::Tensor& hidden,
                                       const std::optional<PatchSize>& patch,
                                       std::int64_t seq_len) {
  if (!hidden.defined() || hidden.dim() < 3) return std::nullopt;
  TokenShape shape;
  shape.batch = hidden.size(0);
  if (seq_len > 0) {
    shape.tokens = seq_len;
  } else if (hidden.dim() == 3) {
    shape.tokens = hidden.size(1);
  } else if (hidden.dim() == 5 && patch && (*patch)[0] > 0 && (*patch)[1] > 0 && (*patch)[2] > 0) {
    shape.tokens = (hidden.size(2) / (*patch)[0]) * (hidden.size(3) / (*patch)[1]) *
                   (hidden.size(4) / (*patch)[2]);
  } else {
    return std::nullopt;
  }
  return shape;
}

// ---- wrapping -----------------------------------------------------------------------------------

const char* role_name(Role role) { return stage_info(role).name; }

namespace {

// The trainer a call outside any request belongs to: the one whose micro-step is open on this
// thread, else the process-wide one once a training loop uses it. An inference program that calls
// a wrapped module outside a request is therefore not mistaken for training.
Trainer* training_trainer() {
  if (Trainer* t = vxperf::active_trainer()) return t;
  Engine* e = vxperf::engine();
  Trainer* t = e != nullptr ? e->existing_trainer() : nullptr;
  return t != nullptr && t->in_use() ? t : nullptr;
}

}  // namespace

std::optional<Dtype> autocast_dtype(const ::torch::Device& device) {
  // LibTorch 2.4 made autocast one API over device types; before, CUDA and CPU had their own.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  if (!at::autocast::is_autocast_enabled(device.type())) return std::nullopt;
  return dtype_of(at::autocast::get_autocast_dtype(device.type()));
#else
  if (device.is_cuda()) {
    if (!at::autocast::is_enabled()) return std::nullopt;
    return dtype_of(at::autocast::get_autocast_gpu_dtype());
  }
  if (device.is_cpu()) {
    if (!at::autocast::is_cpu_enabled()) return std::nullopt;
    return dtype_of(at::autocast::get_autocast_cpu_dtype());
  }
  return std::nullopt;
#endif
}

std::optional<Dtype> call_dtype(const ::torch::Tensor* hidden) {
  if (hidden == nullptr || !hidden->defined()) return std::nullopt;
  try {
    return autocast_dtype(hidden->device());
  } catch (...) {
    return std::nullopt;  // unreadable: priced at the model's dtype
  }
}

CallScope::CallScope(Role role, const ::torch::Tensor* hidden,
                     const std::optional<PatchSize>& patch, std::int64_t seq_len) noexcept {
  const StageInfo& row = stage_info(role);
  const bool priced = row.priced;
  auto shape = [&]() -> TokenShape {
    if (!priced || hidden == nullptr) return {0, 1};
    auto s = infer_tokens(*hidden, patch, seq_len);
    return s ? *s : TokenShape{0, hidden->dim() > 0 ? hidden->size(0) : 1};
  };
  if (vxperf::in_request()) {
    auto s = shape();
    void* stream =
        hidden != nullptr && hidden->defined() ? current_stream(hidden->device()) : nullptr;
    stage_.emplace(stage_id(role), s.tokens, s.batch, stream);
    // The matmuls' dtype under autocast prices the stage (the first call that says one wins).
    if (priced) {
      if (auto dtype = call_dtype(hidden)) note_compute_dtype(stage_id(role), *dtype);
    }
  } else if (Trainer* t = training_trainer(); t != nullptr) {
    auto s = shape();
    call_.emplace(row.phase, s.tokens, s.batch, t);
    if (priced) {
      if (auto dtype = call_dtype(hidden)) vxperf::note_compute_dtype(*t, *dtype);
    }
  }
}

CallScope::~CallScope() = default;

void CallScope::set_fraction(double fraction) noexcept {
  if (stage_) stage_->set_fraction(fraction);
  if (call_) call_->set_fraction(fraction);
}

// ---- device hooks -------------------------------------------------------------------------------

bool cuda_build() {
#if defined(VXPERF_TORCH_CUDA)
  return true;
#else
  return false;
#endif
}

void* current_stream(const ::torch::Device& device) {
#if defined(VXPERF_TORCH_CUDA)
  if (device.is_cuda())
    return static_cast<void*>(c10::cuda::getCurrentCUDAStream(device.index()).stream());
#else
  (void)device;
#endif
  return nullptr;
}

std::optional<DeviceReadings> memory_peaks(int device) {
#if defined(VXPERF_TORCH_CUDA)
  if (device < 0) return std::nullopt;
  // Aggregate pool (index 0), as torch.cuda.max_memory_allocated/reserved report.
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  DeviceReadings peaks;
  peaks.allocated = static_cast<std::uint64_t>(stats.allocated_bytes[0].peak);
  peaks.reserved = static_cast<std::uint64_t>(stats.reserved_bytes[0].peak);
  return peaks;
#else
  (void)device;
  return std::nullopt;
#endif
}

void reset_memory_peaks(int device) {
#if defined(VXPERF_TORCH_CUDA)
  if (device >= 0) c10::cuda::CUDACachingAllocator::resetPeakStats(device);
#else
  (void)device;
#endif
}

std::function<std::optional<DeviceReadings>(int)> memory_peaks_provider() { return &memory_peaks; }

bool use_cuda_backend() {
  Engine* e = vxperf::engine();
  if (e == nullptr || !cuda_build()) return false;
  CudaOptions options;
  options.memory_peaks = memory_peaks_provider();
  options.reset_memory_peaks = &reset_memory_peaks;
  options.notice = [e](std::string_view line) { e->notice(line); };
  auto backend = make_cuda_backend(options);
  if (!backend) return false;
  e->set_device_backend(std::move(backend));
  return true;
}

namespace {

// Per thread, as the spans nest: the range opened for each open span (nullptr: none, no profiler).
class ProfilerRanges final : public Observer {
 public:
  void on_begin(const Span& s) override {
    std::unique_ptr<at::RecordFunction> range;
    if (at::hasCallbacks()) {
      range = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
      if (range->isActive()) {
        std::string name(s.name);
        if (s.kind == SpanKind::kRequest || s.kind == SpanKind::kStep) {
          name += ' ' + std::to_string(s.index);
        }
        range->before(std::move(name));
      } else {
        range.reset();
      }
    }
    open().push_back(std::move(range));
  }
  void on_end(const Span&) override {
    auto& ranges = open();
    if (ranges.empty()) return;
    std::unique_ptr<at::RecordFunction> range = std::move(ranges.back());
    ranges.pop_back();
    if (range) range->end();
  }

 private:
  static std::vector<std::unique_ptr<at::RecordFunction>>& open() {
    thread_local std::vector<std::unique_ptr<at::RecordFunction>> ranges;
    return ranges;
  }
};

}  // namespace

std::shared_ptr<Observer> profiler_ranges() { return std::make_shared<ProfilerRanges>(); }

bool use_profiler_ranges() {
  Engine* e = vxperf::engine();
  if (e == nullptr) return false;
  e->add_observer(profiler_ranges());
  return true;
}

}  // namespace vxperf::torch
