#pragma once
// A field value as Qlik users know it: a number, a text, or both (a dual).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace assoc {

// Symbol index that stands for NULL (the absence of a value) in decoded columns.
inline constexpr std::uint32_t kNull = std::numeric_limits<std::uint32_t>::max();

// A value being loaded: the numeric part is NaN when there is none.
struct DualView {
  double number = std::numeric_limits<double>::quiet_NaN();
  std::string_view text;
  bool has_text = false;

  bool has_number() const { return !std::isnan(number); }
  static DualView of_number(double v) { return DualView{v, {}, false}; }
  static DualView of_text(std::string_view t) { return DualView{std::numeric_limits<double>::quiet_NaN(), t, true}; }
  static DualView of_dual(double v, std::string_view t) { return DualView{v, t, true}; }
};

}  // namespace assoc
