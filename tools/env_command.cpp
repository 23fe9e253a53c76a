#include <optional>
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
    "(set ones first). Values that would not parse are said first, as the measured program would\n"
    "say them, the switch VIDEOX_PERF's and, on or off, every other one's; the exit status is\n"
    "then 1.\n",
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
  std::vector<std::string> problems;
  // The engine reads the other variables only when the switch is on; here every one is checked,
  // on or off, as a run with metrics on would read it.
  if (!Settings::parse(env, &problems).enabled()) {
    EnvLookup on = [&env](const std::string& name) -> std::optional<std::string> {
      return name == "VIDEOX_PERF" ? std::optional<std::string>("1") : env(name);
    };
    (void)Settings::parse(on, &problems);
  }
  // What is wrong first, where it is seen; then every variable.
  for (const auto& p : problems) print(p + "\n");
  print(set.empty() ? "set: none\n" : "set:\n" + set);
  print("unset:\n" + unset);
  return problems.empty() ? 0 : 1;
}

}  // namespace
}  // namespace vxperf::cli
