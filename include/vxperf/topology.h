// Where this process sits in its job: rank, world size, sequence-parallel degree.
//
// Thread safety: a plain value.
#pragma once

namespace vxperf {

struct Topology {
  int rank = 0;
  int world_size = 1;
  int sp = 1;  // sequence-parallel degree: ranks sharing one sample
};

}  // namespace vxperf
