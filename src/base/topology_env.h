// Rank and world size from the launcher's environment.
#pragma once

#include <string>
#include <vector>

#include "vxperf/settings.h"
#include "vxperf/topology.h"

namespace vxperf::internal {

// RANK/WORLD_SIZE (torchrun, accelerate), else OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE
// (Open MPI), PMI_RANK/PMI_SIZE (MPICH, Intel MPI), SLURM_PROCID/SLURM_NTASKS (srun). Values that
// do not parse are reported in `problems`. The attempt: TORCHELASTIC_RESTART_COUNT.
Topology topology_from_env(const EnvLookup& env, std::vector<std::string>* problems);

}  // namespace vxperf::internal
