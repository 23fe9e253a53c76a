// Record sinks: in-process receivers of every record the engine settles, beside the records file.
//
//   struct ToMyLogger : vxperf::RecordSink {
//     void on_request(const vxperf::RequestRecord& r, const vxperf::RequestDetail&) override {
//       my_logger.info("request {} took {}s", r.req, r.e2e_s);
//     }
//   };
//   vxperf::Config config;
//   config.sinks.push_back(std::make_shared<ToMyLogger>());
//   vxperf::configure(config);
//
// A sink is called on the thread that settled the record (the one that closed the request or the
// training step), after the log line and the records file were written. It must be quick: a slow
// sink delays that thread. An exception a sink throws is caught, reported once, and the sink is
// called again for later records.
//
// Thread safety: requests on different threads settle concurrently, so on_request may be called
// from several threads at once; on_train_window and on_train_end come from the training thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vxperf/records.h"

namespace vxperf {

// Where human-readable lines go: the "[Perf]" metrics lines, the summaries and vxperf's own
// notices ("vxperf: ..."). The default writes each line to stderr with one write(2).
using LogFn = std::function<void(std::string_view line)>;

// What a request record summarizes, call by call.
struct RequestDetail {
  // The request ended by an exception (a failed pipeline call). It is still recorded.
  bool failed = false;
  // When it began, in wall-clock seconds since the epoch (record.ts less the host time since).
  double start_ts = 0;
  // Milliseconds of every call of every stage, in call order; parallel to record.stages.
  std::vector<std::vector<double>> stage_calls_ms;
  // When each of those calls began: host seconds after the request's start; parallel to
  // stage_calls_ms.
  std::vector<std::vector<double>> stage_calls_start_s;
};

// What the micro-steps and forwards of one training step came to: counted by the trainer as the
// step runs, carried whole into its StepRecord.
struct StepCounts {
  std::int64_t micro_steps = 0;
  std::optional<std::int64_t> tokens;  // per sample, of its first priced forward
  std::int64_t samples = 0;
  std::int64_t fwd_calls = 0;
  // Forwards that computed part of the model (ModelCall::set_fraction): the samples weighted by
  // it, the forward calls it came to, and the calls skipped outright. Equal to samples and
  // fwd_calls, and 0, when every forward was full.
  double effective_samples = 0;
  double effective_fwd = 0;
  std::int64_t skipped_fwd = 0;
  // Forwards of different lengths (micro-steps of different buckets) are each priced at their
  // own: the samples' summed tokens, and the work's (effective samples times tokens, and times
  // tokens squared, for the quadratic attention term). `mixed_tokens`: a forward's length
  // differed from the first's; `tokens` alone prices the step otherwise.
  bool mixed_tokens = false;
  double sample_tokens = 0;
  double work_tokens = 0;
  double work_tokens_sq = 0;
  // The same two sums weighted by the share of each forward's attention products that ran, where
  // a forward said it apart from the rest of its work (`attn_cut`: a cache ran side blocks of
  // other widths); they price the attention term then, the linear one being the rest.
  bool attn_cut = false;
  double attn_tokens = 0;
  double attn_tokens_sq = 0;
  // The dtype its forwards' matmuls ran in, when a front end read it (autocast); nullopt: the
  // trained model's.
  std::optional<Dtype> dtype;
};

// One settled training step of a window.
struct StepRecord : StepCounts {
  std::int64_t step = 0;
  bool warmup = false;
  double total_s = 0;
  // Phase names (static strings) and seconds, in order of first use, then "other".
  std::vector<std::pair<const char*, double>> phases;
  double overrun_s = 0;
};

// What a training window record aggregates: its steps, warmup ones included, in order.
struct WindowDetail {
  std::vector<StepRecord> steps;
};

// A serving rank's requests now: those running and those its server said are waiting in its
// queue (note_queued, RequestOptions::from_queue).
struct RequestLoad {
  int rank = 0;
  std::int64_t in_flight = 0;
  std::int64_t queued = 0;
};

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // The load changed: a request began or ended, or one entered or left the server's queue. Called
  // on that thread, the changes of a rank in order.
  virtual void on_request_load(const RequestLoad& load) { (void)load; }
  virtual void on_request(const RequestRecord& record, const RequestDetail& detail) {
    (void)record;
    (void)detail;
  }
  virtual void on_train_window(const TrainWindowRecord& record, const WindowDetail& detail) {
    (void)record;
    (void)detail;
  }
  // The training's end (once a process, after its last window): the ledger through it.
  virtual void on_train_end(const TrainEndRecord& record) { (void)record; }
};

// A sink that hands each record to `fn` as its JSON line (the line the records file gets).
std::shared_ptr<RecordSink> json_line_sink(std::function<void(std::string_view json_line)> fn);

}  // namespace vxperf
