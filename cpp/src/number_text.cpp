#include "assoc/number_text.hpp"

#include <charconv>
#include <cmath>

namespace assoc {

bool parse_number(std::string_view s, double& out) {
  if (s.empty() || s.size() > 400) return false;
  std::size_t i = 0;
  if (s[0] == '+' || s[0] == '-') ++i;
  // Digits, at most one '.', then an optional exponent; the whole text must be used.
  std::size_t digits = 0;
  bool dot = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      ++digits;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (digits == 0) return false;
  if (i < s.size()) {
    if (s[i] != 'e' && s[i] != 'E') return false;
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) ++exp_digits;
    if (exp_digits == 0 || i != s.size()) return false;
  }
  const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
  double v = 0;
  auto res = std::from_chars(begin, s.data() + s.size(), v);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

std::string format_number(double v) {
  char buf[64];
  if (v == std::trunc(v) && std::fabs(v) < 1e17) {
    auto res = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v));
    return std::string(buf, res.ptr);
  }
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

bool is_canonical_text(std::string_view text, double v) {
  if (v == 0.0 && std::signbit(v)) return false;
  return text == format_number(v);
}

}  // namespace assoc
