#include "pricing/pricing.h"

#include <algorithm>

#include "base/stats.h"

namespace vxperf::internal {

Dtype priced_dtype(const std::optional<Dtype>& override_dtype, const std::optional<Dtype>& model) {
  if (override_dtype) return *override_dtype;
  return model.value_or(Dtype::kBf16);
}

double priced_density(const std::optional<double>& override_density, double declared) {
  if (override_density) return *override_density;
  return valid_density(declared) ? declared : 1.0;
}

ModelInfo priced_model(const ModelInfo& declared, const Settings& settings) {
  ModelInfo m = declared;
  m.params = settings.dit_params != 0 ? settings.dit_params : declared.params;
  m.attention = usable_widths(declared.attention, settings.attn_flops);
  m.text_tokens = m.attention ? declared.text_tokens : 0;
  m.attn_density = priced_density(settings.attn_density, declared.attn_density);
  return m;
}

namespace {

// The peak of every device of the job (the rates are job rates), with where it came from;
// nullopt when the device has no known peak in this dtype.
std::optional<double> job_peak(const PeakFn& per_device_peak, Dtype dtype, int devices,
                               PeakSource* source) {
  ResolvedPeak per_device = per_device_peak(dtype);
  if (!per_device.tflops || *per_device.tflops == 0.0) return std::nullopt;
  *source = per_device.source;
  return *per_device.tflops * devices;
}

}  // namespace

std::optional<DitThroughput> price_request(const std::vector<PricedStage>& stages, int devices,
                                           const std::optional<Dtype>& dtype_override,
                                           const PeakFn& per_device_peak) {
  double total_flops = 0.0;    // what the calls computed
  double nominal_flops = 0.0;  // as if every call had been a full forward
  double attn_flops = 0.0;
  double total_ms = 0.0;
  std::int64_t total_count = 0;
  std::int64_t max_tokens = 0;
  std::int64_t max_batch = 0;
  std::int64_t params_sum = 0;
  bool partial = false;
  double effective_sum = 0.0;
  std::size_t sizes = 0;  // calls of one model at one length and batch: a size
  std::int64_t skipped = 0;
  std::optional<Dtype> model_dtype;
  std::optional<Dtype> storage;
  double density = 1.0;
  for (const PricedStage& s : stages) {
    if (s.params == 0) continue;  // a model with no parameters prices nothing
    params_sum += s.params;
    if (!s.called || s.tokens == 0) continue;
    const CallGroup all_full{s.tokens, s.batch, s.calls, static_cast<double>(s.calls),
                             static_cast<double>(s.calls)};
    const CallGroup* first = s.groups.empty() ? &all_full : s.groups.data();
    const CallGroup* last = first + (s.groups.empty() ? 1 : s.groups.size());
    for (const CallGroup* g = first; g != last; ++g) {
      double tokens = static_cast<double>(g->tokens);
      double attention =
          attention_flops(s.attention, tokens, static_cast<double>(s.text_tokens), s.attn_density);
      double per_forward = linear_flops(static_cast<double>(s.params), tokens) + attention;
      double count = static_cast<double>(g->calls);
      // Equal to the count, bit for bit, when no call was cut short.
      double effective = g->effective;
      total_flops += per_forward * static_cast<double>(g->batch) * effective;
      nominal_flops += per_forward * static_cast<double>(g->batch) * count;
      // The attention products at the share of them that ran: the rest of the call's work is
      // its linear layers'.
      attn_flops += attention * static_cast<double>(g->batch) *
                    (g->attn_effective >= 0 ? g->attn_effective : effective);
      partial = partial || effective != count;
      effective_sum += effective;
      ++sizes;
    }
    // What the record says of the stage: its first call's length and rows, as the reference's.
    max_tokens = std::max(max_tokens, s.tokens);
    max_batch = std::max(max_batch, s.batch);
    total_ms += s.total_ms;
    total_count += s.calls;
    skipped += s.skipped_calls;
    if (!model_dtype) model_dtype = s.dtype;
    if (!storage) storage = s.storage_dtype;
    if (density == 1.0 && s.attention) density = s.attn_density;
  }
  if (total_count == 0 || total_ms <= 0) return std::nullopt;
  DitThroughput d;
  d.params = params_sum;
  d.tokens = max_tokens;
  d.batch = max_batch;
  // A job rate: under sequence parallel each rank is handed the whole length but computes a
  // shard, so the peak it is compared with is that of every device in the group.
  d.devices = devices;
  // What one full forward costs; a skipped call lowers the rate, not the model's size. Where calls
  // of different sizes (two experts, two lengths) were cut short, a forward's cost is the mean
  // of the work that ran, so that flops_per_fwd x effective_fwd is the request's FLOPs.
  d.flops_per_fwd = partial && sizes > 1 && effective_sum > 0
                        ? total_flops / effective_sum
                        : nominal_flops / static_cast<double>(total_count);
  d.attn_share = total_flops != 0.0 ? attn_flops / total_flops : 0.0;
  d.tflops = total_flops / (total_ms / 1000.0) / 1e12;
  d.dtype = priced_dtype(dtype_override, model_dtype);
  if (storage && *storage != d.dtype) d.weights_dtype = storage;
  d.attn_density = density;
  if (partial) {
    d.skipped_fwd = skipped;
    d.effective_fwd = effective_sum;
  }
  d.peak_tflops = job_peak(per_device_peak, d.dtype, d.devices, &d.peak_source);
  if (d.peak_tflops) d.mfu = d.tflops / *d.peak_tflops;
  return d;
}

void price_window(const std::vector<const StepRecord*>& steps, const ModelInfo& model,
                  bool attention_enabled, std::optional<double> coef_override, int devices,
                  const std::optional<Dtype>& dtype_override, const PeakFn& per_device_peak,
                  TrainThroughput& t) {
  // A step that captured no token count contributes neither work nor time.
  std::vector<const StepRecord*> priced;
  std::vector<double> priced_totals;
  std::vector<double> priced_tokens;  // per sample, each step's mean over its forwards
  for (const StepRecord* s : steps) {
    if (s->tokens.value_or(0) != 0 && s->samples != 0) {
      priced.push_back(s);
      priced_totals.push_back(s->total_s);
      priced_tokens.push_back(s->mixed_tokens
                                  ? s->sample_tokens / static_cast<double>(s->samples)
                                  : static_cast<double>(*s->tokens));
    }
  }
  double priced_s = plain_sum(priced_totals);
  if (priced.empty() || !(priced_s > 0) || model.params == 0) return;

  StepCoefficients coef = step_coefficients(model.params, model.trainable, model.checkpointing,
                                            model.attention, attention_enabled, coef_override);
  // Sums over sums: with mixed buckets, a mean of products is not a product of means.
  double linear = 0.0;
  double attention = 0.0;
  double attention_ran = 0.0;  // where forwards said their attention's share apart
  bool any_cut = false;
  bool partial = false;
  double effective_fwd = 0.0;
  std::int64_t skipped_fwd = 0;
  for (const StepRecord* s : priced) {
    double tokens = static_cast<double>(*s->tokens);
    // A forward that computed part of the model is priced at that part, its backward with it; a
    // step whose forwards were all full prices its samples as they are, bit for bit.
    bool cut_short = s->effective_fwd != static_cast<double>(s->fwd_calls);
    double n = cut_short ? s->effective_samples : static_cast<double>(s->samples);
    const double text = static_cast<double>(model.text_tokens);
    double step_attention = 0.0;
    if (s->mixed_tokens) {
      // Forwards of different lengths: each at its own (the sums over their samples).
      linear += linear_flops(static_cast<double>(model.params), s->work_tokens);
      step_attention = attention_flops_over(model.attention, s->work_tokens, s->work_tokens_sq,
                                            text, model.attn_density);
    } else {
      linear += linear_flops(static_cast<double>(model.params), tokens) * n;
      step_attention = attention_flops(model.attention, tokens, text, model.attn_density) * n;
    }
    attention += step_attention;
    attention_ran += s->attn_cut ? attention_flops_over(model.attention, s->attn_tokens,
                                                        s->attn_tokens_sq, text, model.attn_density)
                                 : step_attention;
    any_cut = any_cut || s->attn_cut;
    partial = partial || cut_short;
    effective_fwd += cut_short ? s->effective_fwd : static_cast<double>(s->fwd_calls);
    skipped_fwd += s->skipped_fwd;
  }
  double per_forward = linear + attention;
  double flops_total = coef.mfu * per_forward;
  double hw_flops_total = coef.hfu * per_forward;
  // A job rate: local work times the data-parallel width, against the peak of every device.
  double dp = static_cast<double>(t.dp);
  t.priced = true;
  t.params = model.params;
  t.trainable = model.trainable;
  t.tokens = fmean(priced_tokens);
  t.priced_steps = static_cast<std::int64_t>(priced.size());
  t.priced_s = priced_s;
  t.flops_coef = coef.mfu;
  t.flops_coef_hw = coef.hfu;
  t.flops_coef_reason = coef.reason;
  t.flops_per_step = flops_total / static_cast<double>(priced.size());
  // The work is what the forwards' shares say; of it, the attention products' is what ran of them.
  t.attn_share = per_forward != 0.0 ? (any_cut ? attention_ran : attention) / per_forward : 0.0;
  t.devices = devices;
  t.tflops = flops_total * dp / priced_s / 1e12;
  t.hw_tflops = hw_flops_total * dp / priced_s / 1e12;
  // What the forwards ran in (autocast, mixed precision) beats what the weights are stored in.
  std::optional<Dtype> ran_in;
  for (const StepRecord* s : priced) {
    if (s->dtype) {
      ran_in = s->dtype;
      break;
    }
  }
  t.dtype = priced_dtype(dtype_override, ran_in ? ran_in : model.dtype);
  if (model.storage_dtype && *model.storage_dtype != t.dtype) t.weights_dtype = model.storage_dtype;
  t.attn_density = model.attention ? model.attn_density : 1.0;
  if (partial) {
    t.skipped_fwd = skipped_fwd;
    t.effective_fwd = effective_fwd;
  }
  t.peak_tflops = job_peak(per_device_peak, t.dtype, t.devices, &t.peak_source);
  if (t.peak_tflops) {
    t.mfu = t.tflops / *t.peak_tflops;
    t.hfu = t.hw_tflops / *t.peak_tflops;
  }
}

}  // namespace vxperf::internal
