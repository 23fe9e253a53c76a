// The settings table (vxperf/settings_table.h) against what Settings::parse reads and against the
// environment table of docs/SETTINGS.md.
#include "vxperf/settings_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "vxperf/settings.h"

namespace vxperf {
namespace {

std::set<std::string> table_names() {
  std::set<std::string> names;
  for (const SettingRow& row : kSettingRows) names.insert(row.name);
  return names;
}

TEST(SettingsTable, ParseReadsEveryRowAndNothingElse) {
  std::set<std::string> asked;
  for (const char* level : {"", "0", "1", "2"}) {
    EnvLookup lookup = [&](const std::string& name) -> std::optional<std::string> {
      asked.insert(name);
      if (name == "VIDEOX_PERF" && *level) return std::string(level);
      return std::nullopt;
    };
    (void)Settings::parse(lookup, nullptr);
  }
  EXPECT_EQ(asked, table_names());
  EXPECT_EQ(table_names().size(), kSettingRows.size());  // no name twice
}

// "| `NAME` | meaning | default |" rows of docs/SETTINGS.md's "Environment variables" section.
std::vector<std::pair<std::string, std::string>> doc_rows() {
  std::ifstream in(VXPERF_SETTINGS_DOC);
  std::vector<std::pair<std::string, std::string>> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## Environment variables";
    if (!inside || line.rfind("| `VIDEOX_PERF", 0) != 0) continue;
    std::string name = line.substr(3, line.find('`', 3) - 3);
    std::string rest = line.substr(0, line.size() - (line.back() == '|' ? 1 : 0));
    while (!rest.empty() && rest.back() == ' ') rest.pop_back();
    std::string last = rest.substr(rest.rfind(" | ") + 3);
    rows.emplace_back(name, last);
  }
  return rows;
}

TEST(SettingsTable, TheDocsListEveryRowWithItsDefault) {
  auto rows = doc_rows();
  ASSERT_EQ(rows.size(), kSettingRows.size()) << VXPERF_SETTINGS_DOC;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].first, kSettingRows[i].name) << "row " << i;
    EXPECT_EQ(rows[i].second, kSettingRows[i].default_text) << rows[i].first;
  }
}

}  // namespace
}  // namespace vxperf
