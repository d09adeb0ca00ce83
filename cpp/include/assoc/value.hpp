#pragma once
// A value while an expression is evaluated: NULL, a number, a text, or both (a dual), as
// Qlik's chart expressions see values (spec chart-expressions §1.1, §6).
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

namespace assoc {

struct Value {
  double num = std::numeric_limits<double>::quiet_NaN();  // NaN: no numeric part
  std::string text;
  bool has_text = false;

  bool is_null() const { return std::isnan(num) && !has_text; }
  bool has_number() const { return !std::isnan(num); }

  static Value null() { return Value{}; }
  // A number; NaN and infinities are NULL (no numeric part).
  static Value number(double v) {
    Value out;
    if (std::isfinite(v)) out.num = v;
    return out;
  }
  static Value of_text(std::string t) {
    Value out;
    out.text = std::move(t);
    out.has_text = true;
    return out;
  }
  static Value dual(double v, std::string t) {
    Value out = of_text(std::move(t));
    if (std::isfinite(v)) out.num = v;
    return out;
  }
  static Value boolean(bool b) { return number(b ? -1.0 : 0.0); }
};

// The text a value shows: its own text, else its number's canonical text; "" for NULL.
std::string shown_text(const Value& v);

// The numeric interpretation: the numeric part, else the text read as a number (blanks
// around it allowed); NaN when there is none.
double numeric_of(const Value& v);

// True in a condition: a non-zero numeric interpretation. 0, NULL and other texts are false.
inline bool is_true(const Value& v) {
  const double x = numeric_of(v);
  return !std::isnan(x) && x != 0;
}

// The same value in the engine's sense: same number when both have one, else the same text.
bool same_value(const Value& a, const Value& b);

}  // namespace assoc
