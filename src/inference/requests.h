// The inference half of an engine: it opens requests, settles each one into its record at its end
// (one synchronize of its device, every call resolved, grouped by stage and priced) and recycles
// it; it holds the transformers declared for every request and the exit summary's numbers.
//
// Thread safety: every member may be called from any thread; a request belongs to the thread that
// opened it. `mu_` guards the declared models, the request counter and the summary; no I/O happens
// under it.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "inference/inference_summary.h"
#include "inference/request.h"
#include "runtime/context.h"
#include "vxperf/inference.h"
#include "vxperf/model.h"

namespace vxperf::internal {

class Requests {
 public:
  explicit Requests(Context& context);
  Requests(const Requests&) = delete;
  Requests& operator=(const Requests&) = delete;

  // Opens a request (nullptr in a forked child, said once); the caller makes it the thread's.
  Request* begin(const RequestOptions& options);
  // Ends and settles the request (synchronizing its device once), then recycles it.
  void end(Request* request, bool failed);
  // Forgets a request that never ended (a replayed script that stops inside one): no record, no
  // line, as the reference never reports a call that did not return; its events are released.
  void abandon(Request* request);

  // The server's queue grew or shrank by `delta` (vxperf::note_queued).
  void note_queued(std::int64_t delta);

  // A transformer priced in every request from now on (Engine::declare_model).
  void declare_model(std::string_view stage, const ModelInfo& info);
  // The same for one request only (see Request::models).
  void declare_model(Request& request, std::string_view stage, const ModelInfo& info);

  // The exit summary's line, once: nullopt when no request outside warmup was measured, when this
  // rank does not log, or when it was taken already.
  std::optional<InferenceSummaryLine> take_summary();

  // Held around a fork (see runtime/fork_guard.h).
  void lock_for_fork() { mu_.lock(); }
  void unlock_after_fork() { mu_.unlock(); }

 private:
  DeclaredModel declared(std::string_view stage, const ModelInfo& info) const;
  void settle(Request& request, double t_end, bool failed);
  // Changes the load and tells the sinks, in order (under load_mu_).
  void change_load(std::int64_t in_flight, std::int64_t queued);

  std::mutex load_mu_;
  RequestLoad load_;

  Context& ctx_;
  std::mutex mu_;
  std::vector<DeclaredModel> models_;
  std::int64_t next_request_ = 0;
  InferenceSummary summary_;
  bool summary_done_ = false;
};

// ---- this thread's request (the scopes of vxperf/inference.h and vxperf/markers.h) ----

// Opens a request of `requests` on this thread, unless one is open already (a pipeline called
// from inside another: the outer request owns it). Never throws.
Request* open_request(Requests& requests, const RequestOptions& options) noexcept;
// Closes `request`, this thread's, and reports it. Never throws.
void close_request(Request* request, bool failed) noexcept;

}  // namespace vxperf::internal
