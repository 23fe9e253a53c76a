#include "analysis/units.h"

#include <cmath>

#include "base/strings.h"

namespace vxperf::analysis::units {

using internal::strprintf;

Unit time_unit(double max_s) {
  double a = std::fabs(max_s);
  if (!std::isfinite(a) || a == 0) return {1, "s"};
  if (a < 1e-3) return {1e6, "us"};
  if (a < 1) return {1e3, "ms"};
  if (a < 300) return {1, "s"};
  if (a < 3 * 3600) return {1 / 60.0, "min"};
  return {1 / 3600.0, "h"};
}

Unit bytes_unit(double max_bytes) {
  double a = std::fabs(max_bytes);
  const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double scale = 1;
  int i = 0;
  while (i < 4 && a * scale >= 1024) {
    scale /= 1024;
    ++i;
  }
  return {scale, names[i]};
}

std::string in_unit(double base_value, const Unit& unit) {
  double v = base_value * unit.scale;
  double a = std::fabs(v);
  std::string number = a >= 100 || a == 0 ? strprintf("%.0f", v)
                       : a >= 10          ? strprintf("%.1f", v)
                       : a >= 1           ? strprintf("%.2f", v)
                       : a >= 0.01        ? strprintf("%.3g", v)
                                          : strprintf("%.2g", v);
  return unit.name.empty() ? number : number + " " + unit.name;
}

std::string flops_rate(double tflops) {
  double a = std::fabs(tflops);
  if (a >= 1 || a == 0) return strprintf("%.1f TFLOPS", tflops);
  if (a >= 1e-3) return strprintf("%.1f GFLOPS", tflops * 1e3);
  return strprintf("%.1f MFLOPS", tflops * 1e6);
}

std::string flops_cell(double tflops) {
  double a = std::fabs(tflops);
  if (a >= 1 || a == 0) return strprintf("%.1fT", tflops);
  if (a >= 1e-3) return strprintf("%.1fG", tflops * 1e3);
  return strprintf("%.1fM", tflops * 1e6);
}

std::string percent(double fraction) {
  double p = fraction * 100.0;
  double a = std::fabs(p);
  if (a >= 1 || a == 0 || !std::isfinite(a)) return strprintf("%.1f%%", p);
  if (a >= 0.1) return strprintf("%.2f%%", p);
  return strprintf("%.2g%%", p);
}

std::string param_count(std::int64_t n) {
  double v = static_cast<double>(n);
  if (v >= 1e9) return strprintf("%.2fB", v / 1e9);
  if (v >= 1e6) return strprintf("%.1fM", v / 1e6);
  if (v >= 1e3) return strprintf("%.1fK", v / 1e3);
  return std::to_string(n);
}

std::string gib(std::uint64_t bytes) {
  return strprintf("%.1f GiB", static_cast<double>(bytes) / kGiB);
}

std::string seconds(double s, double largest) {
  double a = std::fabs(std::isnan(largest) ? s : largest);
  if (a >= 1 || a == 0 || !std::isfinite(a)) return strprintf("%.3fs", s);
  if (a >= 1e-3) return strprintf("%.1fms", s * 1e3);
  return strprintf("%.1fus", s * 1e6);
}

std::string seconds_in(double s, const Unit& unit) {
  const double v = s * unit.scale;
  if (unit.name == "s") return strprintf("%.3fs", v);
  if (unit.name == "ms" || unit.name == "us") return strprintf("%.1f%s", v, unit.name.c_str());
  return strprintf("%.2f%s%s", v, unit.name == "min" ? " " : "", unit.name.c_str());
}

std::string duration(double seconds) {
  if (seconds < 10) return strprintf("%.1fs", seconds);
  if (seconds < 120) return strprintf("%.0fs", seconds);
  if (seconds < 7200) return strprintf("%.1f min", seconds / 60.0);
  return strprintf("%.1fh", seconds / 3600.0);
}

}  // namespace vxperf::analysis::units
