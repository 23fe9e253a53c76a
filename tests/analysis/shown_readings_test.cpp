// Every device reading shows where its row in the field table says (its Show,
// vxperf/field_show.h), with no code of its own there: a record carrying every reading the table
// names, and each appears in the report's text, JSON and page, in the Prometheus exposition and
// among the trackers' fields as its Show says; every record field whose row names a series is in
// the exposition. A consumer that named readings by hand would miss
// a reading added with its member and its row alone, and fail here.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/chart_data.h"
#include "analysis_records.h"
#include "schema/show_walk.h"
#include "vxperf/prometheus_sink.h"
#include "vxperf/record_walk.h"
#include "vxperf/report.h"

namespace vxperf::analysis {
namespace {

using Json = nlohmann::json;
using namespace test_records;

struct Shown {
  Show show;
  internal::ShownValue kind;  // whether an integer, a list
};

// The device readings' rows with a Show, in the table's order.
std::vector<Shown> shown_readings() {
  std::vector<Shown> out;
  internal::walk_shown(DeviceReadings{},
                       [&](const char*, const Show& show, const internal::ShownValue& v) {
                         out.push_back({show, v});
                       });
  return out;
}

// `line` with every shown reading set (a list to one reason, a number to 7 or 7.5).
template <class Record>
std::string with_every_reading(const Record& record) {
  Json j = Json::parse(to_json_line(record));
  for (const auto& s : shown_readings()) {
    if (s.kind.list) {
      j[s.show.key] = {"reason_" + std::string(s.show.key)};
    } else if (s.kind.integral) {
      j[s.show.key] = 7;
    } else {
      j[s.show.key] = 7.5;
    }
  }
  return j.dump() + "\n";
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// The report's words for a reading of 7 (an integer) or 7.5 in every record: "power 7.5 W mean,
// 7.5 W max", "SM clock min 7 MHz", "temp max 7 C", "host CPU and DRAM 15.000 J" (a sum of two).
std::string words(const Show& s, bool integral) {
  char number[32];
  std::snprintf(number, sizeof number, "%.*f", s.decimals,
                (integral ? 7.0 : 7.5) * (s.fold == Fold::kSum ? 2 : 1));
  std::string value = std::string(number) + (*s.unit ? std::string(" ") + s.unit : "");
  switch (s.fold) {
    case Fold::kMean:
      return std::string(s.label) + " " + value + " mean, " + value + " max";
    case Fold::kMin:
      return std::string(s.label) + " min " + value;
    case Fold::kMax:
      return std::string(s.label) + " max " + value;
    default:
      return std::string(s.label) + " " + value;
  }
}

TEST(ShownReadings, TheTableNamesWhatEachConsumerNeeds) {
  std::vector<Shown> readings = shown_readings();
  ASSERT_FALSE(readings.empty());
  std::size_t charted = 0;
  for (const auto& r : readings) {
    const Show& s = r.show;
    SCOPED_TRACE(s.key);
    if (s.fold != Fold::kNone || s.charts != 0) EXPECT_NE(s.label, nullptr);
    if (s.fold == Fold::kList) EXPECT_TRUE(r.kind.list);
    if (s.series != SeriesKind::kNone) {
      EXPECT_NE(s.series_name, nullptr);
      EXPECT_NE(s.help, nullptr);
      EXPECT_FALSE(r.kind.list);
    }
    if (s.charts != 0) {
      EXPECT_NE(s.chart, nullptr);
      EXPECT_NE(s.chart_note, nullptr);
      ++charted;
    }
  }
  // What the page keeps of each record (a point's readings).
  EXPECT_LE(charted, ChartData::Impl::kMaxCharted);
  EXPECT_EQ(ChartData::Impl::charted().size(), charted);
}

TEST(ShownReadings, EachShowsInTheReportAndItsPage) {
  RequestRecord r = request(0, 1, 10.0);
  r.ts = 1000.0;
  TrainWindowRecord w = window(0, 0, 10, 1.0);
  w.ts = 1000.0;
  RecordSet set = read_string(with_every_reading(r) + with_every_reading(w));
  ASSERT_EQ(set.requests.size(), 1u);
  ASSERT_EQ(set.windows.size(), 1u);
  Report report = build_report(set);
  const std::string text = format_report(report);
  const Json json = Json::parse(report_json(report));
  const std::string html = report_html(report, set);

  for (const auto& [s, kind] : shown_readings()) {
    SCOPED_TRACE(s.key);
    if (s.fold == Fold::kSum) {  // the job's totals, over the request and the window
      EXPECT_TRUE(has(text, "; " + words(s, kind.integral))) << text;
      EXPECT_TRUE(json["energy"].contains(s.key)) << json["energy"].dump();
      EXPECT_FALSE(json["energy"][s.key].is_null());
      EXPECT_TRUE(has(html, std::string("<td>") + s.label + "</td>"));
    } else if (s.fold != Fold::kNone) {  // each section's energy summary
      for (const char* section : {"requests", "training"}) {
        const Json& energy = json[section]["energy"];
        ASSERT_TRUE(energy.contains(s.key)) << energy.dump();
        EXPECT_FALSE(energy[s.key].is_null() || energy[s.key].empty()) << energy.dump();
      }
      if (s.fold == Fold::kList) {
        const std::string seen = "reason_" + std::string(s.key);
        EXPECT_TRUE(has(text, std::string("  ") + s.label + " " + seen + "\n")) << text;
        EXPECT_TRUE(has(html, seen));
      } else {
        EXPECT_TRUE(has(text, words(s, kind.integral))) << text;
        EXPECT_TRUE(has(html, words(s, kind.integral)));
      }
    }
    if ((s.charts & kChartWindows) != 0) {
      EXPECT_TRUE(has(html, std::string(s.chart) + " per window (" + s.chart_note + ")"));
    }
    if ((s.charts & kChartRequests) != 0) {
      EXPECT_TRUE(has(html, std::string(s.chart) + " per request (" + s.chart_note + ")"));
    }
  }
}

// `x` as the report says a field's value: its decimals, then its unit ("0.012 s").
std::string value_text(const Show& s, double x) {
  char number[32];
  std::snprintf(number, sizeof number, "%.*f", s.decimals, x);
  return std::string(number) + (*s.unit ? std::string(" ") + s.unit : "");
}

// Every record field whose row says how a summary folds it (summarized()) shows in its record
// kind's summary, with no code of its own: in the text's "fields" line, the JSON's "fields" object
// and the page's facts, its mean and highest over two records that hold 7.5 and 2.5.
template <class Record>
void expect_summarized_fields(Record first, Record second, const char* section) {
  struct Field {
    std::string object;
    Show show;
  };
  std::vector<Field> fields;
  internal::walk_shown(Record{}, [&](const char* object, const Show& show,
                                     const internal::ShownValue& v) {
    if (show.summary == Fold::kNone) return;
    EXPECT_EQ(show.summary, Fold::kMean) << show.key << ": only means are written for";
    EXPECT_FALSE(v.integral || v.list) << show.key;
    EXPECT_NE(show.label, nullptr) << show.key;
    fields.push_back({object, show});
  });
  ASSERT_FALSE(fields.empty()) << section << ": the table summarizes no field";
  auto with = [&](const Record& record, double value) {
    Json j = Json::parse(to_json_line(record));
    for (const auto& f : fields) (f.object.empty() ? j : j[f.object])[f.show.key] = value;
    return j.dump() + "\n";
  };
  RecordSet set = read_string(with(first, 7.5) + with(second, 2.5));
  Report report = build_report(set);
  const std::string text = format_report(report);
  const Json json = Json::parse(report_json(report));
  const std::string html = report_html(report, set);
  for (const auto& f : fields) {
    SCOPED_TRACE(f.show.key);
    auto value = [&](double x) { return value_text(f.show, x); };
    const std::string said = value(5.0) + " mean, " + value(7.5) + " max";
    std::size_t line = text.find("\n  fields   ");
    ASSERT_NE(line, std::string::npos) << text;
    std::string fields_line = text.substr(line + 1, text.find('\n', line + 1) - line - 1);
    EXPECT_TRUE(has(fields_line, std::string(f.show.label) + " " + said)) << text;
    const Json& folded = json[section]["fields"];
    EXPECT_EQ(folded[f.show.key], 5.0) << folded.dump();
    EXPECT_EQ(folded[std::string(f.show.key) + "_max"], 7.5) << folded.dump();
    EXPECT_TRUE(has(html, std::string("<td>") + f.show.label + "</td><td>" + said + "</td>"))
        << html;
  }
}

TEST(ShownReadings, EverySummarizedFieldShowsInItsSummary) {
  expect_summarized_fields(request(0, 1, 10.0), request(0, 2, 12.0), "requests");
  expect_summarized_fields(window(0, 0, 10, 1.0), window(0, 10, 10, 1.2), "training");
}

// Every summarized field whose row also shows it per rank (per_rank()) is a column of the ranks'
// table, with no code of its own: its label heads the text's and the page's column, and each
// rank's cell and JSON "fields" hold that rank's fold (rank 0: 7.5 and 2.5, mean 5; rank 1: 1).
template <class Record>
std::size_t expect_ranked_fields(const std::vector<Record>& records) {
  struct Field {
    std::string object;
    Show show;
  };
  std::vector<Field> fields;
  internal::walk_shown(Record{}, [&](const char* object, const Show& show,
                                     const internal::ShownValue&) {
    if (!show.ranked) return;
    EXPECT_EQ(show.summary, Fold::kMean) << show.key << ": per rank only a summarized mean";
    fields.push_back({object, show});
  });
  if (fields.empty()) return 0;
  const double values[] = {7.5, 2.5, 1.0};  // rank 0, rank 0, rank 1
  std::string lines;
  for (std::size_t i = 0; i < records.size(); ++i) {
    Json j = Json::parse(to_json_line(records[i]));
    for (const auto& f : fields) (f.object.empty() ? j : j[f.object])[f.show.key] = values[i];
    lines += j.dump() + "\n";
  }
  RecordSet set = read_string(lines);
  Report report = build_report(set);
  const std::string text = format_report(report);
  const Json json = Json::parse(report_json(report));
  const std::string html = report_html(report, set);
  auto text_line = [&](const std::string& start) {
    std::size_t at = text.find("\n" + start);
    return at == std::string::npos ? std::string()
                                   : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  for (const auto& f : fields) {
    SCOPED_TRACE(f.show.key);
    auto value = [&](double x) { return value_text(f.show, x); };
    EXPECT_TRUE(has(text_line("  rank requests"), f.show.label)) << text;
    EXPECT_TRUE(has(text_line("     0 "), value(5.0))) << text;
    EXPECT_TRUE(has(text_line("     1 "), value(1.0))) << text;
    EXPECT_EQ(json["ranks"].size(), 2u);
    if (json["ranks"].size() != 2u) continue;
    EXPECT_EQ(json["ranks"][0]["fields"][f.show.key], 5.0) << json["ranks"].dump();
    EXPECT_EQ(json["ranks"][0]["fields"][std::string(f.show.key) + "_max"], 7.5);
    EXPECT_EQ(json["ranks"][1]["fields"][f.show.key], 1.0) << json["ranks"].dump();
    EXPECT_TRUE(has(html, std::string("<th>") + f.show.label + "</th>")) << html;
    EXPECT_TRUE(has(html, "<td>" + value(5.0) + "</td>")) << html;
    EXPECT_TRUE(has(html, "<td>" + value(1.0) + "</td>")) << html;
  }
  return fields.size();
}

TEST(ShownReadings, EveryFieldShownPerRankIsAColumnOfTheRanksTable) {
  std::size_t ranked =
      expect_ranked_fields(std::vector<RequestRecord>{request(0, 1, 10.0), request(0, 2, 12.0),
                                                      request(1, 1, 11.0)}) +
      expect_ranked_fields(std::vector<TrainWindowRecord>{
          window(0, 0, 10, 1.0), window(0, 10, 10, 1.2), window(1, 0, 10, 1.1)});
  EXPECT_GE(ranked, 1u) << "no row is shown per rank";
}

// Every row of the request's and the window's tables that names a series (the readings', the
// DiT's MFU, the window's samples per second, peak memory by kind) is a series of the sink, by
// its name for that record, with its labels, once the record holds the field.
TEST(ShownReadings, EveryFieldSeriesIsInPrometheus) {
  RequestRecord r = request(0, 1, 10.0);
  TrainWindowRecord w = window(0, 0, 10, 1.0);
  Json rj = Json::parse(with_every_reading(r));
  rj["realtime_factor"] = 2.5;
  Json wj = Json::parse(with_every_reading(w));
  wj["energy_j_per_sample"] = 7.5;
  RecordSet set = read_string(rj.dump() + "\n" + wj.dump() + "\n");
  ASSERT_EQ(set.requests.size(), 1u);
  ASSERT_EQ(set.windows.size(), 1u);
  PrometheusSink sink;
  sink.on_request(set.requests[0], RequestDetail{});
  sink.on_train_window(set.windows[0], WindowDetail{});
  const std::string exposition = sink.render();

  std::size_t series = 0;
  auto check = [&](const auto& record, bool window_record) {
    internal::walk_shown(record, [&](const char* object, const Show& s,
                                     const internal::ShownValue& v) {
      if (s.series == SeriesKind::kNone) return;
      SCOPED_TRACE(std::string(object) + "." + s.key);
      EXPECT_FALSE(v.list);
      ASSERT_TRUE(v.number.has_value()) << "the test's records leave it out: set it";
      ++series;
      const std::string name = s.series_for(window_record);
      const char* type = s.series == SeriesKind::kGauge ? "gauge" : "counter";
      EXPECT_TRUE(has(exposition, "# HELP " + name + " " + s.help_for(window_record) + "\n"))
          << exposition;
      EXPECT_TRUE(has(exposition, "# TYPE " + name + " " + type + "\n")) << exposition;
      std::string labels = R"({rank="0")";
      if (s.labels == SeriesLabels::kRankDevice) labels += R"(,device="cuda:0")";
      if (s.kind_label != nullptr) labels += R"(,kind=")" + std::string(s.kind_label) + "\"";
      EXPECT_TRUE(has(exposition, name + labels + "} ")) << exposition;
    });
  };
  check(set.requests[0], false);
  check(set.windows[0], true);
  // The DiT's TFLOPS and MFU, the real-time factor, the window's rate, MFU, HFU, J per sample,
  // goodput and ledger parts, peak memory twice each, the readings' series twice each.
  EXPECT_GE(series, 23u);
}

TEST(ShownReadings, TheTrackersLogEachReadingTheTableSaysTo) {
  std::vector<TrackedField> fields = window_tracker_fields();
  for (const auto& [s, kind] : shown_readings()) {
    if (s.tracker == nullptr) continue;
    SCOPED_TRACE(s.key);
    bool listed = false;
    for (const auto& f : fields) listed = listed || (f.object.empty() && f.key == s.key);
    EXPECT_TRUE(listed);
  }
  // The window's own and its throughput's, beside the readings.
  auto listed = [&](const std::string& object, const std::string& key) {
    for (const auto& f : fields) {
      if (f.object == object && f.key == key && f.name == key) return true;
    }
    return false;
  };
  EXPECT_TRUE(listed("", "eta_s"));
  EXPECT_TRUE(listed("", "energy_j_per_sample"));
  EXPECT_TRUE(listed("throughput", "samples_per_s"));
  EXPECT_TRUE(listed("throughput", "mfu"));
}

}  // namespace
}  // namespace vxperf::analysis
