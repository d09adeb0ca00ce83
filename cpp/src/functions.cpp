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

#include "assoc/interpretation.hpp"
#include "assoc/number_text.hpp"
#include "assoc/utf8.hpp"
#include "function_library.hpp"

namespace assoc {

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

std::string from_code_points(const std::vector<char32_t>& cps, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end && i < cps.size(); ++i) append_utf8(out, cps[i]);
  return out;
}

// Case of a code point for the scripts of Europe: Latin (ASCII, Latin-1, Extended-A), Greek
// and Cyrillic; others stay as they are.
char32_t upper_cp(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z' ? c - 32 : c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x131) return 'I';
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 0) ? c - 1 : c;
    if (c != 0x138 && c != 0x149 && c != 0x17F && (c < 0x139 || c > 0x148) && c % 2 == 1) return c - 1;
    return c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}
char32_t lower_cp(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x130) return 'i';
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 1) ? c + 1 : c;
    if (c != 0x138 && c != 0x149 && c != 0x17F && c % 2 == 0) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}
std::string map_case(std::string_view s, char32_t (*f)(char32_t)) {
  bool ascii = true;
  for (const char ch : s) ascii = ascii && static_cast<unsigned char>(ch) < 0x80;
  if (ascii) {
    std::string out(s);
    for (char& ch : out) ch = static_cast<char>(f(static_cast<unsigned char>(ch)));
    return out;
  }
  std::vector<char32_t> cps = code_points(s);
  for (char32_t& c : cps) c = f(c);
  return from_code_points(cps, 0, cps.size());
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

Value number(double v) { return Value::number(v); }
bool integral(double x) { return std::isfinite(x) && x == std::floor(x); }

// ---- scalar function bodies --------------------------------------------------------------------

using Args = std::span<const Value>;
using Ix = Interpretation;

Value fn_if(Args a, const Ix&) { return is_true(a[0]) ? a[1] : a.size() > 2 ? a[2] : Value::null(); }
Value fn_alt(Args a, const Ix& ix) {
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    if (!std::isnan(ix.number(a[i]))) return a[i];
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
Value fn_match(Args a, const Ix&) { return match_with(a, 0); }
Value fn_mixmatch(Args a, const Ix&) { return match_with(a, 1); }
Value fn_wildmatch(Args a, const Ix&) { return match_with(a, 2); }
Value fn_pick(Args a, const Ix& ix) {
  const double n = ix.number(a[0]);
  if (!integral(n) || n < 1 || n > static_cast<double>(a.size() - 1)) return Value::null();
  return a[static_cast<std::size_t>(n)];
}
Value fn_class(Args a, const Ix& ix) {
  const double x = ix.number(a[0]), w = ix.number(a[1]);
  if (std::isnan(x) || std::isnan(w) || w <= 0) return Value::null();
  const std::string label = a.size() > 2 && !a[2].is_null() ? shown_text(a[2]) : "x";
  const double offset = a.size() > 3 ? ix.number(a[3]) : 0;
  if (std::isnan(offset)) return Value::null();
  const double low = std::floor((x - offset) / w) * w + offset;
  return Value::dual(low, format_number(low) + " <= " + label + " < " + format_number(low + w));
}
Value fn_dual(Args a, const Ix& ix) {
  const double n = ix.number(a[1]);
  return Value::dual(n, shown_text(a[0]));
}
Value fn_num(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  if (std::isnan(x)) return Value::null();
  if (a.size() < 2 || a[1].is_null()) return number(x);
  const std::string dec = a.size() > 2 && !a[2].is_null() ? shown_text(a[2]) : "";
  const std::string thou = a.size() > 3 && !a[3].is_null() ? shown_text(a[3]) : "";
  return Value::dual(x, ix.format_number(x, shown_text(a[1]), dec, thou));
}
// Num#(text [, fmt [, dec [, thou]]]): the text read as a number, the format's literal text
// around the digits (and a % after them) allowed; NULL when it is no number.
Value fn_num_hash(Args a, const Ix& ix) {
  const std::string t = shown_text(a[0]);
  const bool has_fmt = a.size() > 1 && !a[1].is_null();
  const std::string fmt = has_fmt ? shown_text(a[1]) : "";
  std::string dec = a.size() > 2 && !a[2].is_null() ? shown_text(a[2]) : "";
  if (dec.empty()) dec = ix.decimal;
  const std::string thou = a.size() > 3 && !a[3].is_null()
                               ? shown_text(a[3])
                               : (!has_fmt || fmt.find(',') != std::string::npos ? ix.thousand : std::string());
  const std::string_view core = std::string_view(fmt).substr(0, fmt.find(';'));
  const std::size_t first = core.find_first_of("#0"), last = core.find_last_of("#0");
  const auto strip = [](std::string_view v) {
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    return v;
  };
  const std::string_view prefix = strip(core.substr(0, first == std::string_view::npos ? core.size() : first));
  const std::string_view suffix = last == std::string_view::npos ? std::string_view{} : strip(core.substr(last + 1));
  std::string_view s = strip(t);
  if (!prefix.empty() && s.substr(0, prefix.size()) == prefix) s = strip(s.substr(prefix.size()));
  if (!suffix.empty() && s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix)
    s = strip(s.substr(0, s.size() - suffix.size()));
  const double x = read_plain(s, dec, thou);
  if (std::isnan(x)) return Value::null();
  return Value::dual(suffix == "%" ? x / 100 : x, t);
}
Value fn_text(Args a, const Ix&) { return a[0].is_null() ? Value::null() : Value::of_text(shown_text(a[0])); }

template <double (*R)(double)>
Value stepped(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  const double step = a.size() > 1 ? ix.number(a[1]) : 1, offset = a.size() > 2 ? ix.number(a[2]) : 0;
  if (std::isnan(x) || std::isnan(step) || std::isnan(offset)) return Value::null();
  if (step == 0) return number(x);
  return number(R((x - offset) / step) * step + offset);
}
double round_half_up(double x) { return std::floor(x + 0.5); }
double floor_d(double x) { return std::floor(x); }
double ceil_d(double x) { return std::ceil(x); }

template <double (*F)(double), bool (*Domain)(double)>
Value math1(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
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

Value fn_pow(Args a, const Ix& ix) { return number(std::pow(ix.number(a[0]), ix.number(a[1]))); }
Value fn_mod(Args a, const Ix& ix) {
  const double x = ix.number(a[0]), y = ix.number(a[1]);
  if (!integral(x) || !integral(y) || y <= 0) return Value::null();
  return number(x - y * std::floor(x / y));
}
Value fn_fmod(Args a, const Ix& ix) {
  const double x = ix.number(a[0]), y = ix.number(a[1]);
  if (std::isnan(x) || std::isnan(y) || y == 0) return Value::null();
  return number(std::fmod(x, y));
}
Value fn_div(Args a, const Ix& ix) {
  const double x = ix.number(a[0]), y = ix.number(a[1]);
  if (std::isnan(x) || std::isnan(y) || y == 0) return Value::null();
  return number(std::trunc(x / y));
}

// Text functions count characters (code points) and take 1-based positions.
double count_arg(const Value& v, const Ix& ix) {
  const double n = ix.number(v);
  return std::isnan(n) ? n : std::floor(n);
}
Value fn_len(Args a, const Ix&) { return number(static_cast<double>(code_points(shown_text(a[0])).size())); }
Value fn_upper(Args a, const Ix&) { return Value::of_text(map_case(shown_text(a[0]), upper_cp)); }
Value fn_lower(Args a, const Ix&) { return Value::of_text(map_case(shown_text(a[0]), lower_cp)); }
Value fn_left(Args a, const Ix& ix) {
  const auto cps = code_points(shown_text(a[0]));
  const double n = count_arg(a[1], ix);
  if (std::isnan(n)) return Value::null();
  return Value::of_text(from_code_points(cps, 0, static_cast<std::size_t>(std::clamp(n, 0.0, 1e9))));
}
Value fn_right(Args a, const Ix& ix) {
  const auto cps = code_points(shown_text(a[0]));
  const double n = count_arg(a[1], ix);
  if (std::isnan(n)) return Value::null();
  const std::size_t k = std::min(cps.size(), static_cast<std::size_t>(std::clamp(n, 0.0, 1e9)));
  return Value::of_text(from_code_points(cps, cps.size() - k, cps.size()));
}
Value fn_mid(Args a, const Ix& ix) {
  const auto cps = code_points(shown_text(a[0]));
  const double start = count_arg(a[1], ix);
  const double n = a.size() > 2 ? count_arg(a[2], ix) : 1e9;
  if (std::isnan(start) || std::isnan(n) || start < 1) return Value::null();
  const auto b = static_cast<std::size_t>(std::min(start - 1, 1e9));
  const auto e = b + static_cast<std::size_t>(std::clamp(n, 0.0, 1e9));
  return Value::of_text(from_code_points(cps, b, e));
}
Value fn_index(Args a, const Ix& ix) {
  const auto s = code_points(shown_text(a[0])), sub = code_points(shown_text(a[1]));
  const double nth = a.size() > 2 ? count_arg(a[2], ix) : 1;
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
Value fn_trim(Args a, const Ix&) { return trim_with(a, true, true); }
Value fn_ltrim(Args a, const Ix&) { return trim_with(a, true, false); }
Value fn_rtrim(Args a, const Ix&) { return trim_with(a, false, true); }
Value fn_replace(Args a, const Ix&) {
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
Value fn_substringcount(Args a, const Ix&) {
  const std::string s = shown_text(a[0]), sub = shown_text(a[1]);
  if (sub.empty()) return number(0);
  double n = 0;
  for (std::size_t i = s.find(sub); i != std::string::npos; i = s.find(sub, i + sub.size())) ++n;
  return number(n);
}
Value fn_repeat(Args a, const Ix& ix) {
  const std::string s = shown_text(a[0]);
  const double n = a.size() > 1 ? count_arg(a[1], ix) : 1;
  if (std::isnan(n)) return Value::null();
  if (n <= 0) return Value::of_text("");
  if (n * static_cast<double>(s.size()) > 1e8) return Value::null();  // beyond any sensible text
  std::string out;
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) out += s;
  return Value::of_text(out);
}
Value fn_chr(Args a, const Ix& ix) {
  const double n = ix.number(a[0]);
  if (!integral(n) || n < 0 || n > 0x10FFFF || (n >= 0xD800 && n <= 0xDFFF)) return Value::null();
  std::string out;
  append_utf8(out, static_cast<char32_t>(n));
  return Value::of_text(out);
}
Value fn_ord(Args a, const Ix&) {
  const auto cps = code_points(shown_text(a[0]));
  return cps.empty() ? Value::null() : number(static_cast<double>(cps[0]));
}
Value fn_isnull(Args a, const Ix&) { return Value::boolean(a[0].is_null()); }
Value fn_null(Args, const Ix&) { return Value::null(); }
Value fn_true(Args, const Ix&) { return Value::boolean(true); }
Value fn_false(Args, const Ix&) { return Value::boolean(false); }
Value fn_isnum(Args a, const Ix& ix) { return Value::boolean(!std::isnan(ix.number(a[0]))); }
Value fn_istext(Args a, const Ix& ix) { return Value::boolean(a[0].has_text && std::isnan(ix.number(a[0]))); }
Value fn_coalesce(Args a, const Ix&) {
  for (const Value& v : a)
    if (!v.is_null()) return v;
  return Value::null();
}
// Range functions (§5): over their arguments, which an inter-record function may widen to
// several rows (RangeSum(Above(Sum(X), 0, 12))).
Value fn_rangesum(Args a, const Ix&) {
  double s = 0;
  for (const Value& v : a)
    if (v.has_number()) s += v.num;
  return number(s);
}
Value fn_rangeavg(Args a, const Ix&) {
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
Value fn_rangemin(Args a, const Ix&) { return range_extreme(a, false); }
Value fn_rangemax(Args a, const Ix&) { return range_extreme(a, true); }
template <typename Pred>
Value range_count(Args a, Pred pred) {
  double n = 0;
  for (const Value& v : a)
    if (pred(v)) n += 1;
  return number(n);
}
Value fn_rangecount(Args a, const Ix&) { return range_count(a, [](const Value& v) { return !v.is_null(); }); }
Value fn_rangenullcount(Args a, const Ix&) { return range_count(a, [](const Value& v) { return v.is_null(); }); }
Value fn_rangenumericcount(Args a, const Ix&) { return range_count(a, [](const Value& v) { return v.has_number(); }); }
Value fn_rangetextcount(Args a, const Ix&) {
  return range_count(a, [](const Value& v) { return !v.is_null() && !v.has_number(); });
}
Value fn_rangemissingcount(Args a, const Ix&) { return range_count(a, [](const Value& v) { return !v.has_number(); }); }
Value fn_rangeonly(Args a, const Ix&) {
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
Value fn_rangeminstring(Args a, const Ix&) { return range_string(a, false); }
Value fn_rangemaxstring(Args a, const Ix&) { return range_string(a, true); }
Value fn_rangemode(Args a, const Ix&) {
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
// Capitalize: each word's first letter upper case, its others lower case (words: runs
// without white space).
Value fn_capitalize(Args a, const Ix&) {
  std::vector<char32_t> cps = code_points(shown_text(a[0]));
  bool start = true;
  for (char32_t& c : cps) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    c = space ? c : start ? upper_cp(c) : lower_cp(c);
    start = space;
  }
  return Value::of_text(from_code_points(cps, 0, cps.size()));
}
// PurgeChar(s, chars) drops, KeepChar(s, chars) keeps, the characters of s that are in chars.
template <bool Keep>
Value fn_filter_chars(Args a, const Ix&) {
  const auto cps = code_points(shown_text(a[0])), set = code_points(shown_text(a[1]));
  std::vector<char32_t> out;
  for (const char32_t c : cps)
    if ((std::find(set.begin(), set.end(), c) != set.end()) == Keep) out.push_back(c);
  return Value::of_text(from_code_points(out, 0, out.size()));
}
// TextBetween(s, before, after [, n]): the text between the n-th `before` and the `after`
// that follows it; NULL when either is missing.
Value fn_text_between(Args a, const Ix& ix) {
  const std::string s = shown_text(a[0]), first = shown_text(a[1]), second = shown_text(a[2]);
  const double n = a.size() > 3 ? std::floor(ix.number(a[3])) : 1;
  if (std::isnan(n) || n < 1 || first.empty() || second.empty()) return Value::null();
  std::size_t end = 0;
  std::string result;
  for (double k = 0; k < n; ++k) {
    const std::size_t at = s.find(first, end);
    if (at == std::string::npos) return Value::null();
    const std::size_t stop = s.find(second, at + first.size());
    if (stop == std::string::npos) return Value::null();
    result = s.substr(at + first.size(), stop - at - first.size());
    end = stop + second.size();
  }
  return Value::of_text(result);
}
// FindOneOf(s, chars [, n]): the position (from 1) of the n-th character of s that is in
// chars; 0 when there is none.
Value fn_find_one_of(Args a, const Ix& ix) {
  const auto cps = code_points(shown_text(a[0])), set = code_points(shown_text(a[1]));
  const double n = a.size() > 2 ? std::floor(ix.number(a[2])) : 1;
  if (std::isnan(n) || n < 1) return number(0);
  double seen = 0;
  for (std::size_t i = 0; i < cps.size(); ++i)
    if (std::find(set.begin(), set.end(), cps[i]) != set.end() && ++seen == n) return number(static_cast<double>(i + 1));
  return number(0);
}
// SubField(s, sep [, n]): the n-th part of s between seps (negative n: from the end); without
// n the first part (in a LOAD's fields the script makes one row per part instead).
Value fn_subfield(Args a, const Ix& ix) {
  if (a[1].is_null()) return Value::null();
  const std::string s = shown_text(a[0]), sep = shown_text(a[1]);
  std::vector<std::string> parts;
  if (sep.empty()) {
    parts.push_back(s);
  } else {
    std::size_t b = 0;
    for (std::size_t at = s.find(sep); at != std::string::npos; at = s.find(sep, b)) {
      parts.push_back(s.substr(b, at - b));
      b = at + sep.size();
    }
    parts.push_back(s.substr(b));
  }
  if (a.size() < 3) return Value::of_text(parts[0]);
  const double k = ix.number(a[2]);
  if (std::isnan(k)) return Value::null();
  const double count = static_cast<double>(parts.size());
  const double i = std::trunc(k);
  if (i >= 1 && i <= count) return Value::of_text(parts[static_cast<std::size_t>(i) - 1]);
  if (i <= -1 && -i <= count) return Value::of_text(parts[static_cast<std::size_t>(count + i)]);
  return Value::null();
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
    {"True", 0, 0, false, fn_true},
    {"False", 0, 0, false, fn_false},
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
    {"Capitalize", 1, 1, true, fn_capitalize},
    {"PurgeChar", 2, 2, true, fn_filter_chars<false>},
    {"KeepChar", 2, 2, true, fn_filter_chars<true>},
    {"TextBetween", 3, 4, true, fn_text_between},
    {"FindOneOf", 2, 3, true, fn_find_one_of},
    {"SubField", 2, 3, false, fn_subfield},
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
    {"FractileExc", AggKind::kFractileExc, 2, 2, true, false, -1},
    {"Skew", AggKind::kSkew, 1, 1, true, false, -1},
    {"Kurtosis", AggKind::kKurtosis, 1, 1, true, false, -1},
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
    "valuelist", "valueloop", "dimensionality",
};

}  // namespace

bool wildcard_match(std::string_view text, std::string_view pattern) {
  return wild(ascii_lower(text), ascii_lower(pattern));
}

std::vector<const ScalarFunction*> scalar_functions() {
  std::vector<const ScalarFunction*> out;
  for (const ScalarFunction& f : kScalars) out.push_back(&f);
  for (const ScalarFunction& f : calendar_functions()) out.push_back(&f);
  for (const ScalarFunction& f : hash_functions()) out.push_back(&f);
  for (const ScalarFunction& f : codepage_functions()) out.push_back(&f);
  return out;
}

const ScalarFunction* find_scalar_function(std::string_view name) {
  static const std::map<std::string, const ScalarFunction*, std::less<>> by_name = [] {
    std::map<std::string, const ScalarFunction*, std::less<>> m;
    for (const ScalarFunction* f : scalar_functions()) m.emplace(ascii_lower(f->name), f);
    return m;
  }();
  const auto it = by_name.find(ascii_lower(name));
  return it == by_name.end() ? nullptr : it->second;
}

Value call_scalar(const ScalarFunction& f, std::span<const Value> args, const Interpretation& ix) {
  if (f.null_in_null_out)
    for (const Value& v : args)
      if (v.is_null()) return Value::null();
  return f.body(args, ix);
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

Value apply_unary(ExprOp op, const Value& a, const Interpretation& ix) {
  const double x = ix.number(a);
  if (op == ExprOp::kNot) return Value::boolean(std::isnan(x) || x == 0);
  return std::isnan(x) ? Value::null() : number(-x);
}

Value apply_binary(ExprOp op, const Value& a, const Value& b, const Interpretation& ix) {
  switch (op) {
    case ExprOp::kAdd:
    case ExprOp::kSub:
    case ExprOp::kMul:
    case ExprOp::kDiv: {
      const double x = ix.number(a), y = ix.number(b);
      if (std::isnan(x) || std::isnan(y)) return Value::null();
      if (op == ExprOp::kAdd) return number(x + y);
      if (op == ExprOp::kSub) return number(x - y);
      if (op == ExprOp::kMul) return number(x * y);
      return y == 0 ? Value::null() : number(x / y);
    }
    case ExprOp::kConcat:
      if (a.is_null() && b.is_null()) return Value::null();
      return Value::of_text(shown_text(a) + shown_text(b));
    case ExprOp::kAnd:
    case ExprOp::kOr:
    case ExprOp::kXor: {
      const double x = ix.number(a), y = ix.number(b);
      const bool p = !std::isnan(x) && x != 0, q = !std::isnan(y) && y != 0;
      return Value::boolean(op == ExprOp::kAnd ? p && q : op == ExprOp::kOr ? p || q : p != q);
    }
    default: break;
  }
  // Comparisons: NULL op NULL is NULL; against one NULL only <> holds.
  if (a.is_null() || b.is_null()) {
    if (a.is_null() && b.is_null()) return Value::null();
    return Value::boolean(op == ExprOp::kNe);
  }
  if (op == ExprOp::kLike) return Value::boolean(wildcard_match(shown_text(a), shown_text(b)));
  int c;
  const double x = ix.number(a), y = ix.number(b);
  if (op != ExprOp::kPrecedes && op != ExprOp::kFollows && !std::isnan(x) && !std::isnan(y)) {
    c = x < y ? -1 : x > y ? 1 : 0;
  } else {
    // Texts compare by their bytes (UTF-8: by code point), case-sensitively.
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
