#include "assoc/interpretation.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "assoc/number_text.hpp"

namespace assoc {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t b = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.emplace_back(s.substr(b, i - b));
      b = i + 1;
    }
  }
  return out;
}

template <std::size_t N>
void set_names(std::array<std::string, N>& names, std::string_view text) {
  const std::vector<std::string> parts = split(text, ';');
  if (parts.size() < N) return;  // too few names: the defaults stay
  for (std::size_t i = 0; i < N; ++i) names[i] = parts[i];
}

bool whole_setting(std::string_view text, int& out) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  if (text.empty() || text.size() > 9) return false;
  std::size_t i = text[0] == '-' || text[0] == '+' ? 1 : 0;
  if (i == text.size()) return false;
  int v = 0;
  for (std::size_t k = i; k < text.size(); ++k) {
    if (!is_digit(text[k])) return false;
    v = v * 10 + (text[k] - '0');
  }
  out = text[0] == '-' ? -v : v;
  return true;
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::string pad(std::int64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*lld", width, static_cast<long long>(v));
  return buf;
}

// What a read has found so far: the parts of a date and a time (-1: absent).
struct Captures {
  std::int64_t year4 = -1, year2 = -1, month = -1, day = -1, hour = -1, minute = -1, second = -1;
  double fraction = -1;
  int am_pm = -1;  // 0 AM, 1 PM
  bool date_part() const { return year4 >= 0 || year2 >= 0 || month >= 0 || day >= 0; }
};

struct Reader {
  const Interpretation& ix;
  std::string_view text;

  // Matches tokens[i..] (then `rest`, the tokens after an enclosing group) from text[pos] to the
  // end, backtracking over digit counts, names and optional groups as a regular expression would.
  bool match(const std::vector<DateToken>& tokens, std::size_t i, std::size_t pos, Captures& c,
             const std::vector<std::pair<const std::vector<DateToken>*, std::size_t>>& rest) const {
    if (i == tokens.size()) {
      if (rest.empty()) return pos == text.size();
      auto outer = rest;
      const auto [list, at] = outer.back();
      outer.pop_back();
      return match(*list, at, pos, c, outer);
    }
    const DateToken& t = tokens[i];
    using K = DateToken::Kind;
    auto digits_then = [&](std::size_t lo, std::size_t hi, auto&& store) {
      std::size_t n = 0;
      while (n < hi && pos + n < text.size() && is_digit(text[pos + n])) ++n;
      for (; n >= lo && n > 0; --n) {
        Captures next = c;
        store(next, text.substr(pos, n));
        if (match(tokens, i + 1, pos + n, next, rest)) {
          c = next;
          return true;
        }
      }
      return false;
    };
    auto value = [](std::string_view d) {
      std::int64_t v = 0;
      for (const char ch : d) v = v * 10 + (ch - '0');
      return v;
    };
    auto names_then = [&](const auto& names, auto&& store) {
      for (std::size_t k = 0; k < names.size(); ++k) {
        const std::string& name = names[k];
        if (name.empty() || pos + name.size() > text.size() || !iequal(text.substr(pos, name.size()), name)) continue;
        Captures next = c;
        store(next, k);
        if (match(tokens, i + 1, pos + name.size(), next, rest)) {
          c = next;
          return true;
        }
      }
      return false;
    };
    switch (t.kind) {
      case K::kYear4: return digits_then(4, 4, [&](Captures& x, std::string_view d) { x.year4 = value(d); });
      case K::kYear2: return digits_then(2, 2, [&](Captures& x, std::string_view d) { x.year2 = value(d); });
      case K::kMonth2:
      case K::kMonth1: return digits_then(1, 2, [&](Captures& x, std::string_view d) { x.month = value(d); });
      case K::kDay2:
      case K::kDay1: return digits_then(1, 2, [&](Captures& x, std::string_view d) { x.day = value(d); });
      case K::kHour2:
      case K::kHour1: return digits_then(1, 2, [&](Captures& x, std::string_view d) { x.hour = value(d); });
      case K::kMinute: return digits_then(1, 2, [&](Captures& x, std::string_view d) { x.minute = value(d); });
      case K::kSecond: return digits_then(1, 2, [&](Captures& x, std::string_view d) { x.second = value(d); });
      case K::kFraction:
        return digits_then(1, 9, [&](Captures& x, std::string_view d) {
          x.fraction = static_cast<double>(value(d)) / kPow10[d.size()];
        });
      case K::kAmPm: {
        if (pos + 2 > text.size() || lower(text[pos + 1]) != 'm') return false;
        const char a = lower(text[pos]);
        if (a != 'a' && a != 'p') return false;
        Captures next = c;
        next.am_pm = a == 'p' ? 1 : 0;
        if (!match(tokens, i + 1, pos + 2, next, rest)) return false;
        c = next;
        return true;
      }
      case K::kMonthLong:
        return names_then(ix.long_month_names, [](Captures& x, std::size_t k) { x.month = static_cast<std::int64_t>(k + 1); });
      case K::kMonthShort:
        return names_then(ix.month_names, [](Captures& x, std::size_t k) { x.month = static_cast<std::int64_t>(k + 1); });
      case K::kWeekdayLong: return names_then(ix.long_day_names, [](Captures&, std::size_t) {});
      case K::kWeekdayShort: return names_then(ix.day_names, [](Captures&, std::size_t) {});
      case K::kGroup: {
        auto outer = rest;
        outer.emplace_back(&tokens, i + 1);
        Captures next = c;
        if (match(t.group, 0, pos, next, outer)) {
          c = next;
          return true;
        }
        return match(tokens, i + 1, pos, c, rest);
      }
      case K::kLiteral:
        if (t.literal == ' ') {  // any run of white space, none included
          std::size_t n = 0;
          while (pos + n < text.size() && std::isspace(static_cast<unsigned char>(text[pos + n]))) ++n;
          for (std::size_t k = n + 1; k-- > 0;) {
            Captures next = c;
            if (match(tokens, i + 1, pos + k, next, rest)) {
              c = next;
              return true;
            }
          }
          return false;
        }
        if (pos >= text.size() || lower(text[pos]) != lower(t.literal)) return false;
        return match(tokens, i + 1, pos + 1, c, rest);
    }
    return false;
  }
};

double value_of(const Captures& c) {
  double days = 0;
  if (c.date_part()) {
    std::int64_t year = 1899;
    if (c.year4 >= 0) {
      year = c.year4;
    } else if (c.year2 >= 0) {
      year = 2000 + c.year2;
      if (year > 2029) year -= 100;
    }
    const std::int64_t month = c.month >= 0 ? c.month : 12;
    const std::int64_t day = c.day >= 0 ? c.day : 30;
    if (month < 1 || month > 12 || day < 1 || day > 31 || year < 1) return kNaN;
    days = serial_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
    const CivilDate back = civil_from_serial(days);
    if (back.m != month || back.d != day) return kNaN;  // 2/30 and the like
  }
  if (c.hour < 0) return days;
  std::int64_t hour = c.hour;
  const std::int64_t minute = c.minute >= 0 ? c.minute : 0, second = c.second >= 0 ? c.second : 0;
  if (c.am_pm >= 0) {
    if (hour < 1 || hour > 12) return kNaN;
    hour = hour % 12 + (c.am_pm == 1 ? 12 : 0);
  }
  if (hour > 23 || minute > 59 || second > 59) return kNaN;
  const double frac = c.fraction >= 0 ? c.fraction : 0;
  return days + (static_cast<double>(hour * 3600 + minute * 60 + second) + frac) / 86400.0;
}

// A non-negative number in a `#,##0.00`-style pattern with literal text around it.
std::string apply_number_format(double value, std::string_view fmt, std::string_view dec, std::string_view thou) {
  // The pattern: from the first # or 0 over the run of # 0 , . and white space after it.
  const std::size_t start = fmt.find_first_of("#0");
  if (start == std::string_view::npos) return std::string(fmt);
  std::size_t end = start;
  while (end < fmt.size() && (fmt[end] == '#' || fmt[end] == '0' || fmt[end] == ',' || fmt[end] == '.' ||
                              std::isspace(static_cast<unsigned char>(fmt[end]))))
    ++end;
  while (end > start && std::isspace(static_cast<unsigned char>(fmt[end - 1]))) --end;
  const std::string_view pattern = fmt.substr(start, end - start);
  const std::string_view prefix = fmt.substr(0, start), suffix = fmt.substr(end);
  const std::size_t point = pattern.rfind('.');
  const std::string_view int_part = point == std::string_view::npos ? pattern : pattern.substr(0, point);
  const std::string_view dec_part = point == std::string_view::npos ? std::string_view{} : pattern.substr(point + 1);
  int decimals = 0;
  for (const char ch : dec_part) decimals += ch != ',' && ch != ' ' ? 1 : 0;
  decimals = std::min(decimals, 30);
  if (suffix.find('%') != std::string_view::npos) value *= 100;
  char buf[400];
  if (!(std::fabs(value) < 1e300)) return std::string(fmt);
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string text = buf;
  const std::size_t dot = text.find('.');
  std::string whole = text.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : text.substr(dot + 1);
  std::size_t min_int = 0;
  for (const char ch : int_part) min_int += ch == '0' ? 1 : 0;
  if (min_int > 0) {
    if (whole.size() < min_int) whole.insert(0, min_int - whole.size(), '0');
  } else if (whole == "0" && decimals > 0) {
    whole.clear();
  }
  bool grouped = int_part.find(',') != std::string_view::npos;
  if (!grouped) {
    std::string_view inner = int_part;
    while (!inner.empty() && std::isspace(static_cast<unsigned char>(inner.front()))) inner.remove_prefix(1);
    while (!inner.empty() && std::isspace(static_cast<unsigned char>(inner.back()))) inner.remove_suffix(1);
    grouped = inner.find(' ') != std::string_view::npos;
  }
  if (grouped && !thou.empty()) {
    std::string g;
    for (std::size_t i = 0; i < whole.size(); ++i) {
      if (i > 0 && (whole.size() - i) % 3 == 0) g += thou;
      g += whole[i];
    }
    whole = g;
  }
  std::string body = whole;
  if (decimals > 0) body.append(dec).append(frac);
  if (body.empty()) body.assign(1, '0');
  std::string out(prefix);
  return out.append(body).append(suffix);
}

}  // namespace

CivilDate civil_from_serial(double serial) {
  const std::int64_t z = static_cast<std::int64_t>(std::floor(serial)) - kUnixEpochSerial + 719468;
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

std::vector<DateToken> date_tokens(std::string_view fmt) {
  using K = DateToken::Kind;
  struct Word {
    const char* text;
    K kind;
    bool any_case;  // also written in lower case (yyyy, dd) or upper case (HH)
  };
  // Longest first within each letter; M is the month and m the minute, as Qlik's formats have it.
  static constexpr Word kWords[] = {
      {"YYYY", K::kYear4, true}, {"YY", K::kYear2, true},         {"MMMM", K::kMonthLong, false},
      {"MMM", K::kMonthShort, false}, {"MM", K::kMonth2, false},  {"M", K::kMonth1, false},
      {"DD", K::kDay2, true},     {"D", K::kDay1, true},          {"WWWW", K::kWeekdayLong, true},
      {"WWW", K::kWeekdayShort, true}, {"hh", K::kHour2, true},   {"h", K::kHour1, true},
      {"mm", K::kMinute, false},  {"ss", K::kSecond, true},       {"fff", K::kFraction, true},
      {"TT", K::kAmPm, true},
  };
  std::vector<DateToken> out;
  for (std::size_t i = 0; i < fmt.size();) {
    if (fmt[i] == '[') {
      const std::size_t close = fmt.find(']', i);
      if (close != std::string_view::npos) {
        DateToken g;
        g.kind = K::kGroup;
        g.group = date_tokens(fmt.substr(i + 1, close - i - 1));
        out.push_back(std::move(g));
        i = close + 1;
        continue;
      }
    }
    bool found = false;
    for (const Word& w : kWords) {
      const std::string_view word(w.text);
      if (i + word.size() > fmt.size()) continue;
      const std::string_view at = fmt.substr(i, word.size());
      if (at == word || (w.any_case && iequal(at, word))) {
        DateToken t;
        t.kind = w.kind;
        out.push_back(std::move(t));
        i += word.size();
        found = true;
        break;
      }
    }
    if (!found) {
      DateToken t;
      t.literal = fmt[i++];
      out.push_back(std::move(t));
    }
  }
  return out;
}

Interpretation::Interpretation()
    : month_names{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"},
      long_month_names{"January", "February", "March",     "April",   "May",      "June",
                       "July",    "August",   "September", "October", "November", "December"},
      day_names{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"},
      long_day_names{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"} {
  refresh();
}

const Interpretation& Interpretation::defaults() {
  static const Interpretation kDefaults;
  return kDefaults;
}

Interpretation Interpretation::from_variables(const std::vector<std::pair<std::string, std::string>>& variables) {
  Interpretation ix;
  for (const auto& [name, text] : variables) {
    int n = 0;
    if (name == "ThousandSep") ix.thousand = text;
    else if (name == "DecimalSep") ix.decimal = text.empty() ? "." : text;
    else if (name == "MoneyThousandSep") ix.money_thousand = text;
    else if (name == "MoneyDecimalSep") ix.money_decimal = text.empty() ? "." : text;
    else if (name == "MoneyFormat") ix.money_format = text;
    else if (name == "DateFormat") ix.date_format = text;
    else if (name == "TimeFormat") ix.time_format = text;
    else if (name == "TimestampFormat") ix.timestamp_format = text;
    else if (name == "FirstWeekDay" && whole_setting(text, n)) ix.first_week_day = ((n % 7) + 7) % 7;
    else if (name == "BrokenWeeks" && whole_setting(text, n)) ix.broken_weeks = n != 0;
    else if (name == "ReferenceDay" && whole_setting(text, n)) ix.reference_day = std::clamp(n, 0, 31);
    else if (name == "FirstMonthOfYear" && whole_setting(text, n)) ix.first_month_of_year = std::clamp(n, 1, 12);
    else if (name == "MonthNames") set_names(ix.month_names, text);
    else if (name == "LongMonthNames") set_names(ix.long_month_names, text);
    else if (name == "DayNames") set_names(ix.day_names, text);
    else if (name == "LongDayNames") set_names(ix.long_day_names, text);
  }
  ix.refresh();
  return ix;
}

void Interpretation::refresh() {
  const std::string_view positive = std::string_view(money_format).substr(0, money_format.find(';'));
  currency.clear();
  for (const char ch : positive)
    if (std::string_view("#0,.-() ").find(ch) == std::string_view::npos) currency += ch;
  read_patterns_.clear();
  for (const std::string_view f : {std::string_view(date_format), std::string_view(timestamp_format),
                                   std::string_view(time_format), std::string_view("YYYY-MM-DD"),
                                   std::string_view("YYYY-MM-DD hh:mm:ss[.fff]"),
                                   std::string_view("YYYY-MM-DDThh:mm:ss[.fff]")})
    read_patterns_.push_back(date_tokens(f));
}

double read_plain(std::string_view s, std::string_view decimal, std::string_view thousand) {
  std::string t(s);
  if (!thousand.empty() && thousand != decimal && t.find(thousand) != std::string::npos) {
    std::string_view head = t;
    if (!decimal.empty()) head = head.substr(0, head.find(decimal));
    while (!head.empty() && (head.front() == '+' || head.front() == '-')) head.remove_prefix(1);
    std::size_t b = 0, groups = 0;
    for (std::size_t i = 0; i <= head.size(); ++i) {
      if (i < head.size() && head.compare(i, thousand.size(), thousand) != 0) continue;
      const std::size_t len = i - b;
      if (groups == 0 ? (len < 1 || len > 3) : len != 3) return kNaN;
      ++groups;
      b = i + thousand.size();
      i = b - 1;
    }
    std::string plain;
    for (std::size_t i = 0; i < t.size();) {
      if (t.compare(i, thousand.size(), thousand) == 0) {
        i += thousand.size();
      } else {
        plain += t[i++];
      }
    }
    t = plain;
  }
  if (!decimal.empty() && decimal != ".") {
    if (t.find('.') != std::string::npos) return kNaN;
    const std::size_t at = t.find(decimal);
    if (at != std::string::npos) {
      t.erase(at, decimal.size());
      t.insert(t.begin() + static_cast<std::ptrdiff_t>(at), '.');
    }
  }
  double out;
  if (t.empty() || !parse_number(t, out) || !std::isfinite(out)) return kNaN;
  return out;
}

double Interpretation::number(const Value& v) const {
  if (v.has_number()) return v.num;
  if (!v.has_text) return kNaN;
  return read(v.text);
}

double Interpretation::read(std::string_view text) const {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) return kNaN;
  double n = read_plain(s, decimal, thousand);
  if (!std::isnan(n)) return n;
  if (!currency.empty() && s.find(currency) != std::string_view::npos) {
    const bool negative = s.size() >= 2 && s.front() == '(' && s.back() == ')';
    std::string amount(negative ? s.substr(1, s.size() - 2) : s);
    amount.erase(amount.find(currency), currency.size());
    std::string_view a = amount;
    while (!a.empty() && std::isspace(static_cast<unsigned char>(a.front()))) a.remove_prefix(1);
    while (!a.empty() && std::isspace(static_cast<unsigned char>(a.back()))) a.remove_suffix(1);
    n = read_plain(a, money_decimal, money_thousand);
    if (!std::isnan(n)) return negative ? -n : n;
  }
  bool digit = false;
  for (const char ch : s) digit = digit || is_digit(ch);
  if (!digit) return kNaN;
  for (const auto& tokens : read_patterns_) {
    n = read_tokens(s, tokens);
    if (!std::isnan(n)) return n;
  }
  return kNaN;
}

double Interpretation::read_tokens(std::string_view text, const std::vector<DateToken>& tokens) const {
  if (text.size() > 256) return kNaN;  // no date or time is this long; keeps backtracking small
  Reader r{*this, text};
  Captures c;
  if (!r.match(tokens, 0, 0, c, {})) return kNaN;
  return value_of(c);
}

const std::vector<DateToken>& Interpretation::tokens_of(std::string_view fmt) const {
  // read_patterns_ holds DateFormat, TimestampFormat and TimeFormat first.
  if (fmt == date_format) return read_patterns_[0];
  if (fmt == timestamp_format) return read_patterns_[1];
  if (fmt == time_format) return read_patterns_[2];
  thread_local std::string last_format;
  thread_local std::vector<DateToken> last_tokens;
  if (fmt != last_format || last_format.empty()) {
    last_tokens = date_tokens(fmt);
    last_format.assign(fmt);
  }
  return last_tokens;
}

double Interpretation::read_date(std::string_view text, std::string_view fmt) const {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return read_tokens(text, tokens_of(fmt));
}

std::string Interpretation::format_number(double v, std::string_view fmt, std::string_view dec,
                                          std::string_view thou) const {
  if (fmt.empty()) return assoc::format_number(v);
  if (dec.empty()) dec = decimal;
  if (thou.empty()) thou = thousand;
  const std::size_t semi = fmt.find(';');
  if (semi != std::string_view::npos) {
    const std::string_view negative = fmt.substr(semi + 1);
    fmt = fmt.substr(0, semi);
    if (v < 0 && !negative.empty()) return apply_number_format(-v, negative, dec, thou);
  }
  std::string text = apply_number_format(std::fabs(v), fmt, dec, thou);
  const bool nonzero = text.find_first_not_of("0.,") != std::string::npos;
  return v < 0 && nonzero ? "-" + text : text;
}

std::string Interpretation::format_date(double serial, std::string_view fmt) const {
  if (fmt.empty()) fmt = date_format;
  const CivilDate day = civil_from_serial(serial);
  const double seconds = std::round((serial - std::floor(serial)) * 86400.0 * 1000.0) / 1000.0;
  const auto hour = static_cast<std::int64_t>(std::floor(seconds / 3600));
  const double rest = seconds - static_cast<double>(hour) * 3600;
  const auto minute = static_cast<std::int64_t>(std::floor(rest / 60));
  const double second = rest - static_cast<double>(minute) * 60;
  // Monday 0: 1899-12-30 was a Saturday.
  const auto weekday = static_cast<std::size_t>(((static_cast<std::int64_t>(std::floor(serial)) + 5) % 7 + 7) % 7);
  const std::vector<DateToken>& tokens = tokens_of(fmt);
  bool twelve = false;
  const auto find_am_pm = [&](const auto& self, const std::vector<DateToken>& ts) -> void {
    for (const DateToken& t : ts) {
      if (t.kind == DateToken::Kind::kAmPm) twelve = true;
      if (t.kind == DateToken::Kind::kGroup) self(self, t.group);
    }
  };
  find_am_pm(find_am_pm, tokens);
  std::string out;
  const auto write = [&](const auto& self, const std::vector<DateToken>& ts) -> void {
    using K = DateToken::Kind;
    for (const DateToken& t : ts) {
      switch (t.kind) {
        case K::kLiteral: out += t.literal; break;
        case K::kGroup: self(self, t.group); break;
        case K::kYear4: out += day.y >= 0 && day.y < 10000 ? pad(day.y, 4) : std::to_string(day.y); break;
        case K::kYear2: out += pad(((day.y % 100) + 100) % 100, 2); break;
        case K::kMonthLong: out += long_month_names[day.m - 1]; break;
        case K::kMonthShort: out += month_names[day.m - 1]; break;
        case K::kMonth2: out += pad(day.m, 2); break;
        case K::kMonth1: out += std::to_string(day.m); break;
        case K::kDay2: out += pad(day.d, 2); break;
        case K::kDay1: out += std::to_string(day.d); break;
        case K::kWeekdayLong: out += long_day_names[weekday]; break;
        case K::kWeekdayShort: out += day_names[weekday]; break;
        case K::kHour2:
        case K::kHour1: {
          std::int64_t h = hour;
          if (twelve) h = h % 12 == 0 ? 12 : h % 12;
          out += t.kind == K::kHour2 ? pad(h, 2) : std::to_string(h);
          break;
        }
        case K::kMinute: out += pad(minute, 2); break;
        case K::kSecond: out += pad(static_cast<std::int64_t>(std::floor(second)), 2); break;
        case K::kFraction:
          out += pad(static_cast<std::int64_t>(std::llround((second - std::floor(second)) * 1000)), 3);
          break;
        case K::kAmPm: out += hour >= 12 ? "PM" : "AM"; break;
      }
    }
  };
  write(write, tokens);
  return out;
}

}  // namespace assoc
