// What the records reader knows a file by beside its name (records_reader.cpp): its bytes
// hashed, to find a file read twice; and what it says of one. `vxperf report --partial` keeps
// the hash so that a merge finds a file two partials hold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vxperf::analysis {

// FNV-1a over the file's bytes; nullopt when it cannot be read.
std::optional<std::uint64_t> content_hash(const std::string& path);
// The warning for a file not read again: "PATH: the same bytes as EARLIER ...".
std::string repeated_file_warning(const std::string& path, const std::string& earlier);

}  // namespace vxperf::analysis
