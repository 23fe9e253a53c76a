#include <algorithm>

#include "vxperf/topology.h"

namespace vxperf {

ParallelLayout parallel_layout(const Topology& t) {
  ParallelLayout p;
  int world = std::max(1, t.world_size);
  p.cp = std::max(1, t.sp);
  p.tp = std::max(1, t.tp);
  int shared = p.cp * p.tp;  // ranks holding the same samples
  p.dp = std::max(1, world / shared);
  if (t.dp_shard > 0) {
    p.dp_shard = std::min(t.dp_shard, p.dp);
  } else if (t.dp_replicate > 0) {
    p.dp_shard = std::max(1, p.dp / std::min(t.dp_replicate, p.dp));
  }
  p.dp_replicate = std::max(1, p.dp / p.dp_shard);
  if (t.group > 0) {
    p.group = std::min(t.group, world);
  } else {
    p.group = t.v1 ? world : std::min(shared, world);
  }
  p.dp_rank = t.dp_rank >= 0 ? t.dp_rank : (t.v1 ? 0 : std::max(0, t.rank) / shared);
  p.from = t.from;
  return p;
}

ParallelSpec parallel_spec(const Topology& t) {
  return ParallelSpec{t.sp, t.tp, t.dp_shard, t.dp_replicate, t.group, t.dp_rank, t.from};
}

void set_parallel_spec(Topology& t, const ParallelSpec& spec) {
  t.sp = std::max(1, spec.sp);
  t.tp = std::max(1, spec.tp);
  t.dp_shard = std::max(0, spec.dp_shard);
  t.dp_replicate = std::max(0, spec.dp_replicate);
  t.group = std::max(0, spec.group);
  t.dp_rank = std::max(-1, spec.dp_rank);
  t.from = spec.from;
}

}  // namespace vxperf
