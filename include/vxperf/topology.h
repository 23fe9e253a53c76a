// Where this process sits in its job: rank, world size, and how the job's ranks split its work
// (the parallel layout).
//
// Four dimensions split a world: dp_replicate x dp_shard ranks take samples of their own (data
// parallel, dp; dp_shard of them hold one model sharded, FSDP or ZeRO-3), and each such group of
// cp x tp ranks shares its samples: cp (context or sequence parallel: each holds part of a
// sample's sequence) and tp (tensor parallel: each holds part of the weights). Samples per second
// scale by dp alone; a request computed by cp x tp ranks is priced against that many devices.
//
// Thread safety: plain values.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vxperf {

// Dimension -> where it was read ("model", "accelerate", "diffusers", "xfuser", "env", ...).
using LayoutSources = std::vector<std::pair<std::string, std::string>>;

// What a front end read of the layout; 0 (dp_rank: -1) where nothing said, then derived from the
// world. VIDEOX_PERF_SP, VIDEOX_PERF_TP and VIDEOX_PERF_DP_SHARD win over it.
struct ParallelSpec {
  int sp = 0;            // cp: ranks sharing one sample's sequence (ulysses x ring)
  int tp = 0;            // ranks sharing one sample's weights
  int dp_shard = 0;      // data-parallel ranks one copy of the model is sharded over
  int dp_replicate = 0;  // copies of it
  int group = 0;         // ranks computing one request together (0: sp x tp)
  int dp_rank = -1;      // this rank's data-parallel index (-1: rank / (sp x tp))
  LayoutSources from;
};

struct Topology {
  int rank = 0;
  int world_size = 1;
  int sp = 1;  // sequence-parallel degree: ranks sharing one sample
  int tp = 1;  // tensor-parallel degree: ranks sharing one sample's weights
  int dp_shard = 0;
  int dp_replicate = 0;
  int group = 0;
  int dp_rank = -1;
  LayoutSources from;
  // Which attempt of the job this process is: torchrun's restart count (TORCHELASTIC_RESTART_COUNT),
  // when a launcher that restarts jobs said it.
  std::optional<int> attempt;
  // An event script of format v1 says nothing of the layout: its requests are priced against the
  // whole world's peak and its records carry no layout, exactly as the reference's.
  bool v1 = false;
};

// The layout a record was priced with: its "parallel" object.
struct ParallelLayout {
  int dp = 1;            // ranks holding different samples: world / (cp x tp)
  int dp_replicate = 1;  // dp / dp_shard
  int dp_shard = 1;
  int cp = 1;
  int tp = 1;
  int group = 1;  // ranks computing one request: its peak is theirs
  int dp_rank = 0;
  LayoutSources from;  // the dimensions some source said; the others follow from the world
};

// The layout `t` resolves to (a v1 script: every request computed by the whole world).
ParallelLayout parallel_layout(const Topology& t);
// What `t` says of the layout beyond rank and world size, and `t` with `spec` in place of it.
ParallelSpec parallel_spec(const Topology& t);
void set_parallel_spec(Topology& t, const ParallelSpec& spec);

}  // namespace vxperf
