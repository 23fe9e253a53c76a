#include "base/process_age.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace vxperf::internal {

std::optional<double> process_age_s() {
  std::ifstream stat_file("/proc/self/stat");
  std::string stat;
  if (!std::getline(stat_file, stat)) return std::nullopt;
  // The command name may hold spaces and parentheses: the fields after it follow its last ')'.
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  // After the name: state is field 3, the start time (in clock ticks since boot) field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  char* end = nullptr;
  const double start_ticks = std::strtod(field.c_str(), &end);
  const long hz = sysconf(_SC_CLK_TCK);
  std::ifstream uptime_file("/proc/uptime");
  double uptime = 0;
  if (end == field.c_str() || hz <= 0 || !(uptime_file >> uptime)) return std::nullopt;
  const double age = uptime - start_ticks / static_cast<double>(hz);
  if (!(age >= 0)) return std::nullopt;
  return age;
}

}  // namespace vxperf::internal
