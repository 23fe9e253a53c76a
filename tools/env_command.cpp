#include <cstdio>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/settings.h"
#include "vxperf/settings_table.h"

namespace vxperf::cli {
namespace {

constexpr const char* kUsage =
    "usage: vxperf env\n\n"
    "Every VIDEOX_PERF* variable: what it takes, its default, and its value in this environment\n"
    "(set ones first). Values that would not parse are said as the measured program would say\n"
    "them, and the exit status is then 1.\n";

}  // namespace

int env_command(int argc, char** argv) {
  if (print_help_if_asked(argc, argv, kUsage)) return 0;
  if (argc > 1) {
    std::fprintf(stderr, "vxperf env: takes no arguments (%s)\n", argv[1]);
    return 2;
  }
  EnvLookup env = process_env();
  std::string set, unset;
  for (const SettingRow& row : kSettingRows) {
    auto value = env(row.name);
    std::string line = std::string("  ") + row.name + (value ? "=" + *value : "") + "\n      " +
                       row.summary + "; takes " + row.takes + "; default " + row.default_text +
                       "\n";
    (value ? set : unset) += line;
  }
  print(set.empty() ? "set: none\n" : "set:\n" + set);
  print("unset:\n" + unset);
  std::vector<std::string> problems;
  (void)Settings::parse(env, &problems);
  for (const auto& p : problems) print(p + "\n");
  return problems.empty() ? 0 : 1;
}

}  // namespace vxperf::cli
