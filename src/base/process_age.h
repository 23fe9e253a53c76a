// How long ago this process started, as the kernel says it (Linux: /proc/self/stat's start time
// against /proc/uptime, to the kernel's clock tick): where a training job's ledger begins.
//
// Thread safety: reads files; safe from any thread.
#pragma once

#include <optional>

namespace vxperf::internal {

// Seconds since this process started; nullopt where /proc cannot say.
std::optional<double> process_age_s();

}  // namespace vxperf::internal
