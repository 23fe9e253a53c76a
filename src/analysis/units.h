// Numbers in the unit that fits them: for the report's text, its HTML tables and chart axes.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace vxperf::analysis::units {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A display unit: a value in the base unit (seconds, bytes) times `scale` reads in `name`.
struct Unit {
  double scale = 1;
  std::string name;
};

// The unit a set of durations (seconds) whose largest is `max_s` reads best in: us, ms, s, min, h.
Unit time_unit(double max_s);
// The same for byte counts: B, KiB, MiB, GiB, TiB.
Unit bytes_unit(double max_bytes);
// "12.3 ms": three significant digits in `unit`, the unit's name after.
std::string in_unit(double base_value, const Unit& unit);

// A rate given in TFLOPS, in the unit that keeps small ones readable (a CPU run is GFLOPS).
std::string flops_rate(double tflops);
// The same, compact, for table cells ("12.3T").
std::string flops_cell(double tflops);
// A fraction as a percentage with the digits a small one needs: "45.1%", "0.47%", "0.047%"
// (MFU on a CPU is a small fraction of a GPU's peak; "0.0%" would say nothing).
std::string percent(double fraction);
// A parameter count in billions, millions or thousands ("1.42B").
std::string param_count(std::int64_t n);
// "27.9 GiB", one decimal, whatever the size (the text report's memory lines).
std::string gib(std::uint64_t bytes);
// A time as the text report writes it: "10.278s" from a second up, else "30.0ms" or "250.0us"
// (a CPU run's 30 ms request would read "0.030s"); the unit `largest`'s when given, so that the
// numbers of one line share theirs.
std::string seconds(double s, double largest = std::nan(""));
// A time in a unit chosen for a whole table, as the text report writes it: "1.600s", "50.0ms",
// "250.0us", "6.67 min", "3.50h".
std::string seconds_in(double s, const Unit& unit);
// A duration in seconds, minutes or hours ("45s", "90.0 min", "10.0h").
std::string duration(double seconds);

}  // namespace vxperf::analysis::units
