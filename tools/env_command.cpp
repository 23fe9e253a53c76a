#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/settings.h"
#include "vxperf/settings_table.h"

namespace vxperf::cli {

namespace {
int run(int argc, char** argv);
}  // namespace

const Command kEnvCommand = {
    "env", run,
    "usage: vxperf env\n\n"
    "Every VIDEOX_PERF* variable: what it takes, its default, and its value in this environment\n"
    "(set ones first). Values that would not parse are said as the measured program would say\n"
    "them, and the exit status is then 1.\n",
    "every VIDEOX_PERF* variable: its default and its value here"};

namespace {

int run(int argc, char** argv) {
  if (argc > 1) throw UsageError{std::string("takes no arguments (") + argv[1] + ")"};
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

}  // namespace
}  // namespace vxperf::cli
