#pragma once
// Numbers in text form: recognising them in loaded text and writing them canonically.
#include <cstdint>
#include <string>
#include <string_view>

namespace assoc {

// Parses an integer or decimal number (optional sign, digits, fraction, exponent) that fills
// all of `s`; no spaces, no inf/nan, no hex. Returns false when `s` is not such a number.
bool parse_number(std::string_view s, double& out);

// The canonical text of a number: integers without a decimal point, others in the shortest
// form that reads back to the same double.
std::string format_number(double v);

// True when `text` is exactly the canonical text of `v` (so the text need not be stored).
bool is_canonical_text(std::string_view text, double v);

inline constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

inline bool is_digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

// A number read from a field of text. When `fixed`, the value is exactly mantissa / 10^frac (a plain
// integer or decimal of at most 15 digits), which lets narrow columns skip hashing.
struct NumberText {
  double value = 0;
  bool canonical = false;  // the text is exactly the number's canonical form
  bool fixed = false;
  std::int64_t mantissa = 0;
  unsigned frac = 0;
};

// True when [p, p+n) (n > 0) is a number as parse_number reads it. Plain integers and decimals
// of up to 15 digits take a fast path whose results equal parse_number's and is_canonical_text's.
inline bool read_number(const char* p, std::size_t n, NumberText& out) {
  const char c0 = p[0];
  if (!(is_digit(c0) || c0 == '-' || c0 == '+' || c0 == '.')) return false;
  const bool neg = c0 == '-';
  const std::size_t i = neg ? 1 : 0;
  if (c0 != '+' && n - i <= 16) {
    std::uint64_t m = 0;
    std::size_t j = i;
    for (; j < n && is_digit(p[j]); ++j) m = m * 10 + static_cast<std::uint64_t>(p[j] - '0');
    const std::size_t int_digits = j - i;
    if (int_digits > 0 && int_digits <= 15) {
      const bool lead_zero = int_digits > 1 && p[i] == '0';
      if (j == n) {
        const double x = static_cast<double>(m);
        out.value = neg ? -x : x;
        out.canonical = !lead_zero && !(neg && m == 0);  // "-0" keeps its text
        out.fixed = true;
        out.mantissa = neg ? -static_cast<std::int64_t>(m) : static_cast<std::int64_t>(m);
        out.frac = 0;
        return true;
      }
      if (p[j] == '.') {
        std::size_t k = j + 1;
        for (; k < n && is_digit(p[k]); ++k) m = m * 10 + static_cast<std::uint64_t>(p[k] - '0');
        const std::size_t frac = k - j - 1;
        // With at most 15 digits the mantissa and the power of ten are exact doubles, so one
        // division rounds correctly, and the digits are the shortest text of the result.
        if (k == n && frac > 0 && int_digits + frac <= 15) {
          const double x = static_cast<double>(m) / kPow10[frac];
          out.value = neg ? -x : x;
          if (p[k - 1] == '0' || lead_zero || m == 0) {
            out.canonical = false;
          } else if (p[i] != '0' || p[j + 1] != '0') {
            out.canonical = true;  // fixed notation is shorter than scientific here
          } else {
            out.canonical = is_canonical_text(std::string_view(p, n), out.value);  // 0.0…: may be 1e-05
          }
          out.fixed = true;
          out.mantissa = neg ? -static_cast<std::int64_t>(m) : static_cast<std::int64_t>(m);
          out.frac = static_cast<unsigned>(frac);
          return true;
        }
      }
    }
  }
  const std::string_view s(p, n);
  if (!parse_number(s, out.value)) return false;
  out.canonical = is_canonical_text(s, out.value);
  out.fixed = false;
  return true;
}

}  // namespace assoc
