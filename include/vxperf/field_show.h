// How a record field is shown beyond its record's JSON: by `vxperf report` (text, JSON, its page),
// as a Prometheus series, to the experiment trackers. Part of the field's row in its field table
// (src/schema/record_fields.h): the row names its key with show(), and what it says follows:
//
//   io.optional(show("power_w_mean", "power", "W", 1)
//                   .folded(Fold::kMean)
//                   .gauge("vxperf_power_watts", "Mean device power over ...")
//                   .tracked()
//                   .charted(kChartWindows | kChartRequests, "Device power", "mean"),
//               r.power_w_mean);
//
// A Show reads as its key (a `const char*`), so that the walks that write, read and list a table
// take it for one; those that present fields (the report, Prometheus, the trackers) walk the rows
// that have one (src/schema/show_walk.h). A field with no Show is shown nowhere but its record.
#pragma once

#include <cstdint>

namespace vxperf {

// How the report folds a value over the records it summarizes, every rank's alike: a device
// reading in its energy lines (folded()), a record field in its summary's fields (summarized()).
enum class Fold : std::uint8_t {
  kNone,  // not by the report's shared part (energy_j: the energy lines are built around it)
  kMean,  // the records' mean and their highest: "power 150.0 W mean, 200.0 W max"
  kMin,   // the lowest: "SM clock min 1780 MHz"
  kMax,   // the highest: "temp max 62 C"
  kSum,   // the job's total, beside its device energy: "host CPU and DRAM 40.000 J"
  kList,  // strings, each seen once, in order of first appearance: "throttle sw_power_cap"
};

enum class SeriesKind : std::uint8_t { kNone, kGauge, kCounter };
// A series' labels: {rank, device} (the record's device, "cuda:0"), or {rank} (the host's, or a
// rank's latest record: its MFU); a Show's kind() adds {kind}.
enum class SeriesLabels : std::uint8_t { kRankDevice, kRank };

// Where the report's page charts a reading: a line per rank over the windows, over the requests.
inline constexpr std::uint8_t kChartWindows = 1;
inline constexpr std::uint8_t kChartRequests = 2;

struct Show {
  const char* key = nullptr;    // the field's key in its record
  const char* label = nullptr;  // the word the report and its page show it by ("power")
  const char* unit = "";        // "W", "MHz", "C", "J"; "" for none
  int decimals = 0;             // digits the report shows after the point (an integer: none)
  Fold fold = Fold::kNone;      // a device reading: in the energy lines of the report's sections
  // A record field: in the "fields" of its record kind's summary (requests, training), its text,
  // JSON and page. The device readings are folded() instead.
  Fold summary = Fold::kNone;
  // A summarized field: also in the ranks' table, by the same fold over each rank's records (a
  // column of the text and the page, each rank's "fields" in the JSON).
  bool ranked = false;

  // Prometheus: one series of the record's latest value (a gauge) or of the values' sum (a
  // counter), requests and windows alike unless `window_series_name` names the windows' own.
  SeriesKind series = SeriesKind::kNone;
  SeriesLabels labels = SeriesLabels::kRankDevice;
  const char* series_name = nullptr;
  const char* help = nullptr;
  const char* window_series_name = nullptr;  // a training window's series, when not the same
  const char* window_help = nullptr;
  // A `kind` label after the others, with this value: rows that share one series tell theirs
  // apart by it (vxperf_peak_memory_bytes{kind="allocated"} and {kind="reserved"}).
  const char* kind_label = nullptr;

  // The experiment trackers: a training window's value logged as "perf/<tracker>".
  const char* tracker = nullptr;

  // The report's page: "<chart> per window (<note>)", "<chart> per request (<note>)", its axis
  // named by `label`.
  std::uint8_t charts = 0;
  const char* chart = nullptr;
  const char* chart_note = nullptr;

  // What the walks that only write, read or list the table take: the key.
  constexpr operator const char*() const { return key; }  // NOLINT(google-explicit-constructor)

  constexpr Show folded(Fold how) const {
    Show s = *this;
    s.fold = how;
    return s;
  }
  constexpr Show summarized(Fold how) const {
    Show s = *this;
    s.summary = how;
    return s;
  }
  constexpr Show per_rank() const {
    Show s = *this;
    s.ranked = true;
    return s;
  }
  constexpr Show gauge(const char* name, const char* text,
                       SeriesLabels by = SeriesLabels::kRankDevice) const {
    return with_series(SeriesKind::kGauge, name, text, by);
  }
  constexpr Show counter(const char* name, const char* text,
                         SeriesLabels by = SeriesLabels::kRankDevice) const {
    return with_series(SeriesKind::kCounter, name, text, by);
  }
  // A training window's record sets the series `name` instead (a field of a struct both records
  // hold, whose request and window series differ).
  constexpr Show in_windows(const char* name, const char* text) const {
    Show s = *this;
    s.window_series_name = name;
    s.window_help = text;
    return s;
  }
  // The series carries {kind="<value>"}: rows that share one series tell theirs apart.
  constexpr Show kind(const char* value) const {
    Show s = *this;
    s.kind_label = value;
    return s;
  }
  // The series a record of this kind sets, and its help; nullptr for none.
  constexpr const char* series_for(bool window) const {
    return window && window_series_name != nullptr ? window_series_name : series_name;
  }
  constexpr const char* help_for(bool window) const {
    return window && window_help != nullptr ? window_help : help;
  }
  // Logged under its own key.
  constexpr Show tracked() const {
    Show s = *this;
    s.tracker = key;
    return s;
  }
  constexpr Show charted(std::uint8_t where, const char* title, const char* note) const {
    Show s = *this;
    s.charts = where;
    s.chart = title;
    s.chart_note = note;
    return s;
  }

 private:
  constexpr Show with_series(SeriesKind kind, const char* name, const char* text,
                             SeriesLabels by) const {
    Show s = *this;
    s.series = kind;
    s.series_name = name;
    s.help = text;
    s.labels = by;
    return s;
  }
};

// A row's key, with what it is shown by; the rest is added by Show's members above.
constexpr Show show(const char* key, const char* label = nullptr, const char* unit = "",
                    int decimals = 0) {
  return Show{key, label, unit, decimals};
}

}  // namespace vxperf
