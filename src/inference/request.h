// The state of one open request (internal). Reused per thread, so a steady stream of requests
// allocates nothing once the vectors have grown to the pipeline's size.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/observers.h"
#include "vxperf/clock.h"
#include "vxperf/cost_model.h"
#include "vxperf/device.h"
#include "vxperf/model.h"

namespace vxperf::internal {

class Requests;

// A transformer declared for a stage: as the engine prices it (the variables' overrides and
// usable widths applied, see priced_model) and as it was declared (for the trace).
struct DeclaredModel {
  std::string stage;
  ModelInfo priced;
  ModelInfo declared;
};

struct Request {
  struct Pair {
    std::uint32_t stage;
    double t0, t1;
    EventId e0, e1;
    double fraction = 1.0;  // of a full forward it computed: 0 skipped (a cache hit), 1 full
  };
  struct StageState {
    std::string_view name;   // its interned name (stable for the process), once seen
    std::uint32_t slot = 0;  // its place in `order`, so settling costs the stages used, not every
                             // stage name the process knows
    bool seen = false;
    bool priced = false;      // a transformer stage (asked once, when first seen)
    std::int64_t tokens = 0;  // first known value (transformer stages), 0: unknown
    std::int64_t batch = 1;
    std::optional<Dtype> dtype;    // the matmuls' dtype as first said at a call (autocast)
    int open = 0;                  // calls open now (nested calls of one stage are possible)
    double pending_fraction = -1;  // noted for the open call (note_forward_fraction); <0: none
  };

  Requests* owner = nullptr;  // the inference half it was opened by, which settles it
  Clock* clock = nullptr;
  const ObserverList* observers = nullptr;  // as the request began; nullptr: none
  DeviceBackend* backend = nullptr;
  bool device_events = false;  // events are recorded on `device`
  int device = -1;
  std::uint64_t meter = 0;  // the device meter's interval (Context::begin_metering); 0: none
  void* stream = nullptr;
  std::int64_t index = 0;
  bool warmup = false;
  double t0 = 0;
  std::vector<Pair> pairs;           // closed calls, in closing order
  std::vector<StageState> stages;    // indexed by stage id
  std::vector<std::uint32_t> order;  // stage ids in order of first use
  // Transformers declared for this request alone (a pipeline's own components); when any is, the
  // request is priced by these instead of the engine's.
  std::vector<DeclaredModel> models;
  bool own_models = false;

  // Marks a stage as used (at the opening of a call) and keeps its first known token count.
  void note_stage(std::uint32_t id, std::int64_t tokens, std::int64_t batch);
  // Whether `id` is a priced stage with no token count yet.
  bool needs_tokens(std::uint32_t id) const;
  // The fraction of a full forward the call of `id` open now (else the last closed one) computed.
  void note_fraction(std::uint32_t id, double fraction);
  // The dtype a call of `id` ran its matmuls in; the first one said for the stage is kept.
  void note_dtype(std::uint32_t id, Dtype dtype);
  void clear();
};

// Whether a stage name is priced and counted as a denoising step ("transformer", "transformer_2").
bool is_transformer_stage(std::uint32_t id);

}  // namespace vxperf::internal
