// The function library: values, operators and scalar functions (spec chart-expressions §6),
// and the registry every caller finds functions in by name; aggregation bodies are in
// aggregate_functions.cpp. Each function has one body.
#include "assoc/functions.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "assoc/number_text.hpp"
#include "assoc/utf8.hpp"

namespace assoc {

std::string shown_text(const Value& v) {
  if (v.has_text) return v.text;
  if (v.has_number()) return format_number(v.num);
  return {};
}

double numeric_of(const Value& v) {
  if (v.has_number()) return v.num;
  if (!v.has_text) return std::numeric_limits<double>::quiet_NaN();
  std::string_view t = v.text;
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  double out;
  if (!t.empty() && parse_number(t, out)) return out;
  return std::numeric_limits<double>::quiet_NaN();
}

bool same_value(const Value& a, const Value& b) {
  if (a.has_number() || b.has_number()) return a.has_number() && b.has_number() && a.num == b.num;
  return a.has_text == b.has_text && a.text == b.text;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// UTF-8 text as code points and back (positions of the text functions count characters).
std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}
std::string from_code_points(const std::vector<char32_t>& cps, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end && i < cps.size(); ++i) append_utf8(out, cps[i]);
  return out;
}

bool wild(std::string_view t, std::string_view p) {
  // Iterative * / ? matching with one backtrack point (linear in practice).
  std::size_t ti = 0, pi = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++ti;
      ++pi;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

double num(const Value& v) { return numeric_of(v); }
Value number(double v) { return Value::number(v); }
bool integral(double x) { return std::isfinite(x) && x == std::floor(x); }

// ---- dates: day numbers counted from 1899-12-30, as Qlik's -----------------------------------

constexpr std::int64_t kUnixEpochSerial = 25569;  // 1970-01-01
constexpr std::array<const char*, 12> kMonthNames = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr const char* kDefaultDateFormat = "M/D/YYYY";

struct Civil {
  std::int64_t y;
  unsigned m, d;
};
Civil civil_from_serial(double serial) {
  std::int64_t z = static_cast<std::int64_t>(std::floor(serial)) - kUnixEpochSerial + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {y + (m <= 2 ? 1 : 0), m, d};
}
double serial_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<double>(era * 146097 + static_cast<std::int64_t>(doe) - 719468 + kUnixEpochSerial);
}
bool valid_serial(double x) { return std::isfinite(x) && std::fabs(x) < 3e6; }

std::string pad(std::int64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*lld", width, static_cast<long long>(v));
  return buf;
}

// Formats a day number with the tokens YYYY YY MMMM MMM MM M DD D; other characters stay.
std::string format_date(double serial, std::string_view fmt) {
  const Civil c = civil_from_serial(serial);
  std::string out;
  for (std::size_t i = 0; i < fmt.size();) {
    auto run = [&](char ch) {
      std::size_t n = 0;
      while (i + n < fmt.size() && std::toupper(static_cast<unsigned char>(fmt[i + n])) == ch) ++n;
      return n;
    };
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(fmt[i])));
    if (u == 'Y') {
      const std::size_t n = run('Y');
      out += n >= 4 ? std::to_string(c.y) : pad(((c.y % 100) + 100) % 100, 2);
      i += n;
    } else if (u == 'M') {
      const std::size_t n = run('M');
      out += n >= 3 ? std::string(kMonthNames[c.m - 1]) : n == 2 ? pad(c.m, 2) : std::to_string(c.m);
      i += n;
    } else if (u == 'D') {
      const std::size_t n = run('D');
      out += n >= 2 ? pad(c.d, 2) : std::to_string(c.d);
      i += n;
    } else {
      out += fmt[i++];
    }
  }
  return out;
}

// Reads a date in a format of the same tokens; NaN when the text does not fit.
double read_date(std::string_view text, std::string_view fmt) {
  std::int64_t y = -1;
  unsigned m = 0, d = 0;
  std::size_t t = 0;
  auto digits = [&](std::size_t max_n, std::int64_t& out) {
    std::size_t n = 0;
    out = 0;
    while (t < text.size() && n < max_n && is_digit(text[t])) out = out * 10 + (text[t++] - '0'), ++n;
    return n > 0;
  };
  for (std::size_t i = 0; i < fmt.size();) {
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(fmt[i])));
    std::size_t n = 0;
    while (i + n < fmt.size() && std::toupper(static_cast<unsigned char>(fmt[i + n])) == u) ++n;
    std::int64_t v = 0;
    if (u == 'Y') {
      if (!digits(n >= 4 ? 4 : 2, v)) return kNaN;
      y = n >= 4 ? v : 2000 + v;
    } else if (u == 'M' && n >= 3) {
      bool found = false;
      for (unsigned k = 0; k < 12 && !found; ++k) {
        if (ascii_lower(text.substr(t, 3)) == ascii_lower(kMonthNames[k])) {
          m = k + 1;
          t += 3;
          found = true;
        }
      }
      if (!found) return kNaN;
    } else if (u == 'M') {
      if (!digits(2, v)) return kNaN;
      m = static_cast<unsigned>(v);
    } else if (u == 'D') {
      if (!digits(2, v)) return kNaN;
      d = static_cast<unsigned>(v);
    } else {
      for (std::size_t k = 0; k < n; ++k, ++t)
        if (t >= text.size() || text[t] != fmt[i + k]) return kNaN;
    }
    i += n;
  }
  if (t != text.size() || y < 0 || m < 1 || m > 12 || d < 1 || d > 31) return kNaN;
  const double serial = serial_from_civil(y, m, d);
  const Civil back = civil_from_serial(serial);
  if (back.m != m || back.d != d) return kNaN;  // 2/30 and the like
  return serial;
}

// ---- number formats: a subset of Qlik's (# 0 , . % and literal text around) --------------------

std::string format_with(double x, std::string_view fmt, std::string_view dec_sep, std::string_view thou_sep) {
  std::size_t first = fmt.find_first_of("#0"), last = fmt.find_last_of("#0");
  if (first == std::string_view::npos) return std::string(fmt);
  std::size_t core_end = last + 1;
  const std::string_view core = fmt.substr(first, core_end - first);
  std::string prefix(fmt.substr(0, first)), suffix(fmt.substr(core_end));
  const bool percent = fmt.find('%') != std::string_view::npos;
  if (percent) x *= 100;
  const std::size_t point = core.find('.');
  int decimals = 0;
  if (point != std::string_view::npos)
    for (std::size_t i = point + 1; i < core.size(); ++i) decimals += (core[i] == '0' || core[i] == '#') ? 1 : 0;
  const bool grouping = core.find(',') != std::string_view::npos && core.find(',') < point;
  const double scale = std::pow(10.0, decimals);
  const double rounded = std::floor(std::fabs(x) * scale + 0.5) / scale;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, rounded);
  std::string digits = buf;
  std::string int_part = digits.substr(0, digits.find('.'));
  std::string frac = decimals > 0 ? digits.substr(digits.find('.') + 1) : "";
  std::string grouped;
  if (grouping) {
    for (std::size_t i = 0; i < int_part.size(); ++i) {
      if (i > 0 && (int_part.size() - i) % 3 == 0) grouped += thou_sep;
      grouped += int_part[i];
    }
  } else {
    grouped = int_part;
  }
  std::string out = prefix + (x < 0 && rounded != 0 ? "-" : "") + grouped;
  if (decimals > 0) out += std::string(dec_sep) + frac;
  return out + suffix;
}

// ---- scalar function bodies --------------------------------------------------------------------

using Args = std::span<const Value>;

Value fn_if(Args a) { return is_true(a[0]) ? a[1] : a.size() > 2 ? a[2] : Value::null(); }
Value fn_alt(Args a) {
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    if (!std::isnan(num(a[i]))) return a[i];
  return a.back();
}
Value match_with(Args a, int mode) {  // 0 exact, 1 case-insensitive, 2 wildcards
  if (a[0].is_null()) return number(0);
  const std::string s = shown_text(a[0]);
  for (std::size_t i = 1; i < a.size(); ++i) {
    const std::string v = shown_text(a[i]);
    const bool hit = mode == 0 ? s == v : mode == 1 ? ascii_lower(s) == ascii_lower(v) : wildcard_match(s, v);
    if (hit && !a[i].is_null()) return number(static_cast<double>(i));
  }
  return number(0);
}
Value fn_match(Args a) { return match_with(a, 0); }
Value fn_mixmatch(Args a) { return match_with(a, 1); }
Value fn_wildmatch(Args a) { return match_with(a, 2); }
Value fn_pick(Args a) {
  const double n = num(a[0]);
  if (!integral(n) || n < 1 || n > static_cast<double>(a.size() - 1)) return Value::null();
  return a[static_cast<std::size_t>(n)];
}
Value fn_class(Args a) {
  const double x = num(a[0]), w = num(a[1]);
  if (std::isnan(x) || std::isnan(w) || w <= 0) return Value::null();
  const std::string label = a.size() > 2 && !a[2].is_null() ? shown_text(a[2]) : "x";
  const double offset = a.size() > 3 ? num(a[3]) : 0;
  if (std::isnan(offset)) return Value::null();
  const double low = std::floor((x - offset) / w) * w + offset;
  return Value::dual(low, format_number(low) + " <= " + label + " < " + format_number(low + w));
}
Value fn_dual(Args a) {
  const double n = num(a[1]);
  return Value::dual(n, shown_text(a[0]));
}
Value fn_num(Args a) {
  const double x = num(a[0]);
  if (std::isnan(x)) return Value::null();
  if (a.size() < 2 || a[1].is_null()) return number(x);
  const std::string dec = a.size() > 2 && !a[2].is_null() ? shown_text(a[2]) : ".";
  const std::string thou = a.size() > 3 && !a[3].is_null() ? shown_text(a[3]) : ",";
  return Value::dual(x, format_with(x, shown_text(a[1]), dec, thou));
}
Value fn_num_hash(Args a) {
  std::string t = shown_text(a[0]);
  std::string s = t;
  const std::string fmt = a.size() > 1 && !a[1].is_null() ? shown_text(a[1]) : "";
  const std::string dec = a.size() > 2 && !a[2].is_null() ? shown_text(a[2]) : ".";
  const std::string thou = a.size() > 3 && !a[3].is_null() ? shown_text(a[3]) : ",";
  const bool percent = !fmt.empty() && fmt.find('%') != std::string::npos && !s.empty() && s.back() == '%';
  if (percent) s.pop_back();
  std::string clean;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!thou.empty() && s.compare(i, thou.size(), thou) == 0 && thou != dec) {
      i += thou.size() - 1;
      continue;
    }
    if (s.compare(i, dec.size(), dec) == 0) {
      clean += '.';
      i += dec.size() - 1;
      continue;
    }
    if (s[i] != ' ') clean += s[i];
  }
  double x;
  if (clean.empty() || !parse_number(clean, x)) return Value::of_text(t);
  return Value::dual(percent ? x / 100 : x, t);
}
Value fn_text(Args a) { return a[0].is_null() ? Value::null() : Value::of_text(shown_text(a[0])); }

template <double (*R)(double)>
Value stepped(Args a) {
  const double x = num(a[0]);
  const double step = a.size() > 1 ? num(a[1]) : 1, offset = a.size() > 2 ? num(a[2]) : 0;
  if (std::isnan(x) || std::isnan(step) || std::isnan(offset)) return Value::null();
  if (step == 0) return number(x);
  return number(R((x - offset) / step) * step + offset);
}
double round_half_up(double x) { return std::floor(x + 0.5); }
double floor_d(double x) { return std::floor(x); }
double ceil_d(double x) { return std::ceil(x); }

template <double (*F)(double), bool (*Domain)(double)>
Value math1(Args a) {
  const double x = num(a[0]);
  if (std::isnan(x) || !Domain(x)) return Value::null();
  return number(F(x));
}
bool any_x(double) { return true; }
bool non_negative(double x) { return x >= 0; }
bool positive(double x) { return x > 0; }
double sign_of(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
double exp_d(double x) { return std::exp(x); }
double log_d(double x) { return std::log(x); }
double log10_d(double x) { return std::log10(x); }
double sqrt_d(double x) { return std::sqrt(x); }
double fabs_d(double x) { return std::fabs(x); }

Value fn_pow(Args a) { return number(std::pow(num(a[0]), num(a[1]))); }
Value fn_mod(Args a) {
  const double x = num(a[0]), y = num(a[1]);
  if (!integral(x) || !integral(y) || y <= 0) return Value::null();
  return number(x - y * std::floor(x / y));
}
Value fn_fmod(Args a) {
  const double x = num(a[0]), y = num(a[1]);
  if (std::isnan(x) || std::isnan(y) || y == 0) return Value::null();
  return number(std::fmod(x, y));
}
Value fn_div(Args a) {
  const double x = num(a[0]), y = num(a[1]);
  if (std::isnan(x) || std::isnan(y) || y == 0) return Value::null();
  return number(std::trunc(x / y));
}

// Text functions count characters (code points) and take 1-based positions.
double count_arg(const Value& v) {
  const double n = num(v);
  return std::isnan(n) ? n : std::floor(n);
}
Value fn_len(Args a) { return number(static_cast<double>(code_points(shown_text(a[0])).size())); }
Value fn_upper(Args a) { return Value::of_text(ascii_upper(shown_text(a[0]))); }
Value fn_lower(Args a) { return Value::of_text(ascii_lower(shown_text(a[0]))); }
Value fn_left(Args a) {
  const auto cps = code_points(shown_text(a[0]));
  const double n = count_arg(a[1]);
  if (std::isnan(n)) return Value::null();
  return Value::of_text(from_code_points(cps, 0, static_cast<std::size_t>(std::clamp(n, 0.0, 1e9))));
}
Value fn_right(Args a) {
  const auto cps = code_points(shown_text(a[0]));
  const double n = count_arg(a[1]);
  if (std::isnan(n)) return Value::null();
  const std::size_t k = std::min(cps.size(), static_cast<std::size_t>(std::clamp(n, 0.0, 1e9)));
  return Value::of_text(from_code_points(cps, cps.size() - k, cps.size()));
}
Value fn_mid(Args a) {
  const auto cps = code_points(shown_text(a[0]));
  const double start = count_arg(a[1]);
  const double n = a.size() > 2 ? count_arg(a[2]) : 1e9;
  if (std::isnan(start) || std::isnan(n) || start < 1) return Value::null();
  const auto b = static_cast<std::size_t>(std::min(start - 1, 1e9));
  const auto e = b + static_cast<std::size_t>(std::clamp(n, 0.0, 1e9));
  return Value::of_text(from_code_points(cps, b, e));
}
Value fn_index(Args a) {
  const auto s = code_points(shown_text(a[0])), sub = code_points(shown_text(a[1]));
  const double nth = a.size() > 2 ? count_arg(a[2]) : 1;
  if (std::isnan(nth) || nth == 0 || sub.empty() || sub.size() > s.size()) return number(0);
  std::vector<std::size_t> hits;
  for (std::size_t i = 0; i + sub.size() <= s.size(); ++i)
    if (std::equal(sub.begin(), sub.end(), s.begin() + static_cast<std::ptrdiff_t>(i))) hits.push_back(i + 1);
  const double k = nth > 0 ? nth - 1 : static_cast<double>(hits.size()) + nth;
  if (k < 0 || k >= static_cast<double>(hits.size())) return number(0);
  return number(static_cast<double>(hits[static_cast<std::size_t>(k)]));
}
Value trim_with(Args a, bool left, bool right) {
  std::string s = shown_text(a[0]);
  std::size_t b = 0, e = s.size();
  if (left)
    while (b < e && s[b] == ' ') ++b;
  if (right)
    while (e > b && s[e - 1] == ' ') --e;
  return Value::of_text(s.substr(b, e - b));
}
Value fn_trim(Args a) { return trim_with(a, true, true); }
Value fn_ltrim(Args a) { return trim_with(a, true, false); }
Value fn_rtrim(Args a) { return trim_with(a, false, true); }
Value fn_replace(Args a) {
  const std::string s = shown_text(a[0]), from = shown_text(a[1]), to = shown_text(a[2]);
  if (from.empty()) return Value::of_text(s);
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s.compare(i, from.size(), from) == 0) {
      out += to;
      i += from.size();
    } else {
      out += s[i++];
    }
  }
  return Value::of_text(out);
}
Value fn_substringcount(Args a) {
  const std::string s = shown_text(a[0]), sub = shown_text(a[1]);
  if (sub.empty()) return number(0);
  double n = 0;
  for (std::size_t i = s.find(sub); i != std::string::npos; i = s.find(sub, i + sub.size())) ++n;
  return number(n);
}
Value fn_repeat(Args a) {
  const std::string s = shown_text(a[0]);
  const double n = a.size() > 1 ? count_arg(a[1]) : 1;
  if (std::isnan(n)) return Value::null();
  if (n <= 0) return Value::of_text("");
  if (n * static_cast<double>(s.size()) > 1e8) return Value::null();  // beyond any sensible text
  std::string out;
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) out += s;
  return Value::of_text(out);
}
Value fn_chr(Args a) {
  const double n = num(a[0]);
  if (!integral(n) || n < 0 || n > 0x10FFFF || (n >= 0xD800 && n <= 0xDFFF)) return Value::null();
  std::string out;
  append_utf8(out, static_cast<char32_t>(n));
  return Value::of_text(out);
}
Value fn_ord(Args a) {
  const auto cps = code_points(shown_text(a[0]));
  return cps.empty() ? Value::null() : number(static_cast<double>(cps[0]));
}
Value fn_isnull(Args a) { return Value::boolean(a[0].is_null()); }
Value fn_null(Args) { return Value::null(); }
Value fn_isnum(Args a) { return Value::boolean(!std::isnan(num(a[0]))); }
Value fn_istext(Args a) { return Value::boolean(a[0].has_text && std::isnan(num(a[0]))); }
Value fn_coalesce(Args a) {
  for (const Value& v : a)
    if (!v.is_null()) return v;
  return Value::null();
}
// Range functions (§5): over their arguments, which an inter-record function may widen to
// several rows (RangeSum(Above(Sum(X), 0, 12))).
Value fn_rangesum(Args a) {
  double s = 0;
  for (const Value& v : a)
    if (v.has_number()) s += v.num;
  return number(s);
}
Value fn_rangeavg(Args a) {
  double s = 0, n = 0;
  for (const Value& v : a)
    if (v.has_number()) s += v.num, n += 1;
  return n > 0 ? number(s / n) : Value::null();
}
Value range_extreme(Args a, bool max) {
  const Value* best = nullptr;
  for (const Value& v : a)
    if (v.has_number() && (best == nullptr || (max ? v.num > best->num : v.num < best->num))) best = &v;
  return best == nullptr ? Value::null() : number(best->num);
}
Value fn_rangemin(Args a) { return range_extreme(a, false); }
Value fn_rangemax(Args a) { return range_extreme(a, true); }
template <typename Pred>
Value range_count(Args a, Pred pred) {
  double n = 0;
  for (const Value& v : a)
    if (pred(v)) n += 1;
  return number(n);
}
Value fn_rangecount(Args a) { return range_count(a, [](const Value& v) { return !v.is_null(); }); }
Value fn_rangenullcount(Args a) { return range_count(a, [](const Value& v) { return v.is_null(); }); }
Value fn_rangenumericcount(Args a) { return range_count(a, [](const Value& v) { return v.has_number(); }); }
Value fn_rangetextcount(Args a) {
  return range_count(a, [](const Value& v) { return !v.is_null() && !v.has_number(); });
}
Value fn_rangemissingcount(Args a) { return range_count(a, [](const Value& v) { return !v.has_number(); }); }
Value fn_rangeonly(Args a) {
  const Value* one = nullptr;
  for (const Value& v : a) {
    if (v.is_null()) continue;
    if (one == nullptr) {
      one = &v;
    } else if (!same_value(*one, v)) {
      return Value::null();
    }
  }
  return one == nullptr ? Value::null() : *one;
}
// Text sort order: numbers first (ascending), then texts in code-point order.
bool text_order_before(const Value& x, const Value& y) {
  if (x.has_number() != y.has_number()) return x.has_number();
  if (x.has_number()) return x.num < y.num;
  return x.text < y.text;
}
Value range_string(Args a, bool max) {
  const Value* best = nullptr;
  for (const Value& v : a)
    if (!v.is_null() && (best == nullptr || (max ? text_order_before(*best, v) : text_order_before(v, *best)))) best = &v;
  return best == nullptr ? Value::null() : *best;
}
Value fn_rangeminstring(Args a) { return range_string(a, false); }
Value fn_rangemaxstring(Args a) { return range_string(a, true); }
Value fn_rangemode(Args a) {
  std::vector<std::pair<const Value*, std::size_t>> seen;
  for (const Value& v : a) {
    if (v.is_null()) continue;
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return same_value(*p.first, v); });
    if (it == seen.end()) {
      seen.emplace_back(&v, 1);
    } else {
      ++it->second;
    }
  }
  const Value* best = nullptr;
  std::size_t best_n = 0;
  bool tie = false;
  for (const auto& [v, n] : seen) {
    if (n > best_n) {
      best = v, best_n = n, tie = false;
    } else if (n == best_n) {
      tie = true;
    }
  }
  return best == nullptr || tie ? Value::null() : *best;
}
Value fn_year(Args a) {
  const double x = num(a[0]);
  if (!valid_serial(x)) return Value::null();
  return number(static_cast<double>(civil_from_serial(x).y));
}
Value fn_month(Args a) {
  const double x = num(a[0]);
  if (!valid_serial(x)) return Value::null();
  const unsigned m = civil_from_serial(x).m;
  return Value::dual(m, kMonthNames[m - 1]);
}
Value fn_day(Args a) {
  const double x = num(a[0]);
  if (!valid_serial(x)) return Value::null();
  return number(civil_from_serial(x).d);
}
Value fn_date(Args a) {
  const double x = num(a[0]);
  if (!valid_serial(x)) return Value::null();
  const std::string fmt = a.size() > 1 && !a[1].is_null() ? shown_text(a[1]) : kDefaultDateFormat;
  return Value::dual(x, format_date(x, fmt));
}
Value fn_date_hash(Args a) {
  const std::string t = shown_text(a[0]);
  const std::string fmt = a.size() > 1 && !a[1].is_null() ? shown_text(a[1]) : kDefaultDateFormat;
  const double x = read_date(t, fmt);
  return std::isnan(x) ? Value::of_text(t) : Value::dual(x, t);
}

constexpr std::uint8_t kAny = 255;
const ScalarFunction kScalars[] = {
    {"If", 2, 3, false, fn_if},
    {"Alt", 1, kAny, false, fn_alt},
    {"Match", 1, kAny, false, fn_match},
    {"MixMatch", 1, kAny, false, fn_mixmatch},
    {"WildMatch", 1, kAny, false, fn_wildmatch},
    {"Pick", 2, kAny, false, fn_pick},
    {"Class", 2, 4, false, fn_class},
    {"Dual", 2, 2, false, fn_dual},
    {"Num", 1, 4, false, fn_num},
    {"Num#", 1, 4, true, fn_num_hash},
    {"Text", 1, 1, true, fn_text},
    {"Round", 1, 3, true, stepped<round_half_up>},
    {"Floor", 1, 3, true, stepped<floor_d>},
    {"Ceil", 1, 3, true, stepped<ceil_d>},
    {"Fabs", 1, 1, true, math1<fabs_d, any_x>},
    {"Abs", 1, 1, true, math1<fabs_d, any_x>},
    {"Sqrt", 1, 1, true, math1<sqrt_d, non_negative>},
    {"Exp", 1, 1, true, math1<exp_d, any_x>},
    {"Log", 1, 1, true, math1<log_d, positive>},
    {"Log10", 1, 1, true, math1<log10_d, positive>},
    {"Sign", 1, 1, true, math1<sign_of, any_x>},
    {"Pow", 2, 2, true, fn_pow},
    {"Mod", 2, 2, true, fn_mod},
    {"Fmod", 2, 2, true, fn_fmod},
    {"Div", 2, 2, true, fn_div},
    {"Len", 1, 1, true, fn_len},
    {"Upper", 1, 1, true, fn_upper},
    {"Lower", 1, 1, true, fn_lower},
    {"Left", 2, 2, true, fn_left},
    {"Right", 2, 2, true, fn_right},
    {"Mid", 2, 3, true, fn_mid},
    {"Index", 2, 3, true, fn_index},
    {"Trim", 1, 1, true, fn_trim},
    {"LTrim", 1, 1, true, fn_ltrim},
    {"RTrim", 1, 1, true, fn_rtrim},
    {"Replace", 3, 3, true, fn_replace},
    {"SubStringCount", 2, 2, true, fn_substringcount},
    {"Repeat", 1, 2, true, fn_repeat},
    {"Chr", 1, 1, true, fn_chr},
    {"Ord", 1, 1, true, fn_ord},
    {"IsNull", 1, 1, false, fn_isnull},
    {"Null", 0, 0, false, fn_null},
    {"IsNum", 1, 1, false, fn_isnum},
    {"IsText", 1, 1, false, fn_istext},
    {"Coalesce", 1, kAny, false, fn_coalesce},
    {"RangeSum", 1, kAny, false, fn_rangesum},
    {"RangeAvg", 1, kAny, false, fn_rangeavg},
    {"RangeMin", 1, kAny, false, fn_rangemin},
    {"RangeMax", 1, kAny, false, fn_rangemax},
    {"RangeCount", 1, kAny, false, fn_rangecount},
    {"RangeNullCount", 1, kAny, false, fn_rangenullcount},
    {"RangeNumericCount", 1, kAny, false, fn_rangenumericcount},
    {"RangeTextCount", 1, kAny, false, fn_rangetextcount},
    {"RangeMissingCount", 1, kAny, false, fn_rangemissingcount},
    {"RangeOnly", 1, kAny, false, fn_rangeonly},
    {"RangeMinString", 1, kAny, false, fn_rangeminstring},
    {"RangeMaxString", 1, kAny, false, fn_rangemaxstring},
    {"RangeMode", 1, kAny, false, fn_rangemode},
    {"Year", 1, 1, true, fn_year},
    {"Month", 1, 1, true, fn_month},
    {"Day", 1, 1, true, fn_day},
    {"Date", 1, 2, true, fn_date},
    {"Date#", 1, 2, true, fn_date_hash},
};

const AggregateFunction kAggregates[] = {
    {"Sum", AggKind::kSum, 1, 1, true, false, -1},
    {"Count", AggKind::kCount, 1, 1, true, true, -1},
    {"Avg", AggKind::kAvg, 1, 1, true, false, -1},
    {"Min", AggKind::kMin, 1, 2, false, false, -1},
    {"Max", AggKind::kMax, 1, 2, false, false, -1},
    {"Only", AggKind::kOnly, 1, 1, false, false, -1},
    {"MinString", AggKind::kMinString, 1, 1, false, false, -1},
    {"MaxString", AggKind::kMaxString, 1, 1, false, false, -1},
    {"Mode", AggKind::kMode, 1, 1, false, false, -1},
    {"Median", AggKind::kMedian, 1, 1, false, false, -1},
    {"Fractile", AggKind::kFractile, 2, 2, true, false, -1},
    {"Stdev", AggKind::kStdev, 1, 1, true, false, -1},
    {"Var", AggKind::kVar, 1, 1, true, false, -1},
    {"NullCount", AggKind::kNullCount, 1, 1, true, false, -1},
    {"MissingCount", AggKind::kMissingCount, 1, 1, true, false, -1},
    {"NumericCount", AggKind::kNumericCount, 1, 1, true, false, -1},
    {"TextCount", AggKind::kTextCount, 1, 1, true, false, -1},
    {"Concat", AggKind::kConcat, 1, 3, true, false, 2},
    {"FirstSortedValue", AggKind::kFirstSortedValue, 2, 3, true, false, 1},
};

constexpr const char* kPlanned[] = {
    "hrank",    "fractileexc", "skew",
    "kurtosis", "getselectedcount", "getpossiblecount", "getfieldselections", "valuelist", "valueloop",
    "week",     "weekday",  "monthname",   "quartername", "subfield",  "dimensionality",
};

}  // namespace

bool wildcard_match(std::string_view text, std::string_view pattern) {
  return wild(ascii_lower(text), ascii_lower(pattern));
}

const ScalarFunction* find_scalar_function(std::string_view name) {
  const std::string n = ascii_lower(name);
  for (const ScalarFunction& f : kScalars)
    if (ascii_lower(f.name) == n) return &f;
  return nullptr;
}

const AggregateFunction* find_aggregate_function(std::string_view name) {
  const std::string n = ascii_lower(name);
  for (const AggregateFunction& f : kAggregates)
    if (ascii_lower(f.name) == n) return &f;
  return nullptr;
}

bool is_planned_function(std::string_view name) {
  const std::string n = ascii_lower(name);
  return std::any_of(std::begin(kPlanned), std::end(kPlanned), [&](const char* p) { return n == p; });
}

Value apply_unary(ExprOp op, const Value& a) {
  if (op == ExprOp::kNot) return Value::boolean(!is_true(a));
  const double x = num(a);
  return std::isnan(x) ? Value::null() : number(-x);
}

Value apply_binary(ExprOp op, const Value& a, const Value& b) {
  switch (op) {
    case ExprOp::kAdd:
    case ExprOp::kSub:
    case ExprOp::kMul:
    case ExprOp::kDiv: {
      const double x = num(a), y = num(b);
      if (std::isnan(x) || std::isnan(y)) return Value::null();
      if (op == ExprOp::kAdd) return number(x + y);
      if (op == ExprOp::kSub) return number(x - y);
      if (op == ExprOp::kMul) return number(x * y);
      return y == 0 ? Value::null() : number(x / y);
    }
    case ExprOp::kConcat:
      if (a.is_null() && b.is_null()) return Value::null();
      return Value::of_text(shown_text(a) + shown_text(b));
    case ExprOp::kAnd: return Value::boolean(is_true(a) && is_true(b));
    case ExprOp::kOr: return Value::boolean(is_true(a) || is_true(b));
    case ExprOp::kXor: return Value::boolean(is_true(a) != is_true(b));
    default: break;
  }
  // Comparisons: NULL op NULL is NULL; against one NULL only <> holds.
  if (a.is_null() || b.is_null()) {
    if (a.is_null() && b.is_null()) return Value::null();
    return Value::boolean(op == ExprOp::kNe);
  }
  if (op == ExprOp::kLike) return Value::boolean(wildcard_match(shown_text(a), shown_text(b)));
  int c;
  const double x = num(a), y = num(b);
  if (op != ExprOp::kPrecedes && op != ExprOp::kFollows && !std::isnan(x) && !std::isnan(y)) {
    c = x < y ? -1 : x > y ? 1 : 0;
  } else {
    const int t = shown_text(a).compare(shown_text(b));
    c = t < 0 ? -1 : t > 0 ? 1 : 0;
  }
  switch (op) {
    case ExprOp::kEq: return Value::boolean(c == 0);
    case ExprOp::kNe: return Value::boolean(c != 0);
    case ExprOp::kLt:
    case ExprOp::kPrecedes: return Value::boolean(c < 0);
    case ExprOp::kLe: return Value::boolean(c <= 0);
    case ExprOp::kGt:
    case ExprOp::kFollows: return Value::boolean(c > 0);
    case ExprOp::kGe: return Value::boolean(c >= 0);
    default: return Value::null();
  }
}

}  // namespace assoc
