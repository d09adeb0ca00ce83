// The function library's dates and times (spec chart-expressions §6; the script's calendar
// functions): day numbers from 1899-12-30 with the time as a fraction, shown in the app's
// DateFormat, TimeFormat and TimestampFormat, weeks steered by FirstWeekDay, BrokenWeeks and
// ReferenceDay, years by FirstMonthOfYear. A period's start is its first day, its end the
// last millisecond of its last day.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <set>

#include "assoc/interpretation.hpp"
#include "function_library.hpp"

namespace assoc {

namespace {

using Args = std::span<const Value>;
using Ix = Interpretation;

constexpr double kMs = 1.0 / 86'400'000.0;
constexpr std::uint8_t kAny = 255;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
std::int64_t floor_mod(std::int64_t a, std::int64_t b) { return a - floor_div(a, b) * b; }
std::int64_t whole(double x) { return static_cast<std::int64_t>(std::floor(x)); }

// Argument i as a number; `absent` when it is not given or is no number.
double arg_or(Args a, std::size_t i, const Ix& ix, double absent) {
  if (a.size() <= i) return absent;
  const double x = ix.number(a[i]);
  return std::isnan(x) ? absent : x;
}

Value shown(double serial, const Ix& ix, std::string_view fmt) {
  if (!valid_serial(serial)) return Value::null();
  return Value::dual(serial, ix.format_date(serial, fmt));
}

// Months counted from year 0: the month holding a day number, and the first day of one.
std::int64_t month_index(double serial) {
  const CivilDate c = civil_from_serial(serial);
  return c.y * 12 + static_cast<std::int64_t>(c.m) - 1;
}
double month_start(std::int64_t index) {
  const std::int64_t y = floor_div(index, 12);
  return serial_from_civil(y, static_cast<unsigned>(index - y * 12 + 1), 1);
}

// The month index where the month/quarter/year (`size` 1, 3, 12) holding `serial` begins,
// `shift` periods on; quarters and years begin in month `first` (1..12).
std::int64_t period_start(std::int64_t size, double serial, double shift, double first) {
  const std::int64_t base = (std::clamp<std::int64_t>(whole(first), 1, 12) - 1) % size;
  const std::int64_t start = floor_div(month_index(serial) - base, size) * size + base;
  return start + whole(shift) * size;
}

// Monday 0 … Sunday 6 (1899-12-30 was a Saturday).
std::int64_t weekday_of(double serial) { return floor_mod(whole(serial) + 5, 7); }
double week_start(double serial, double shift, std::int64_t first_day) {
  const std::int64_t day = whole(serial);
  return static_cast<double>(day - floor_mod(weekday_of(serial) - first_day, 7) + 7 * whole(shift));
}

// Week and WeekYear: the arguments after the date, else FirstWeekDay, BrokenWeeks, ReferenceDay.
struct WeekRule {
  std::int64_t first_day;
  bool broken;
  std::int64_t reference;  // the day of January the first week holds
  WeekRule(Args a, const Ix& ix)
      : first_day(floor_mod(whole(arg_or(a, 1, ix, ix.first_week_day)), 7)),
        broken(arg_or(a, 2, ix, ix.broken_weeks ? 1 : 0) != 0),
        reference(whole(arg_or(a, 3, ix, ix.reference_day))) {
    if (reference == 0) reference = broken ? 1 : 4;
  }
  double first_week(std::int64_t year) const {
    return week_start(serial_from_civil(year, 1, 1) + static_cast<double>(reference - 1), 0, first_day);
  }
  // The year the week of `serial` counts in, and the start of that year's first week.
  std::pair<std::int64_t, double> year_of(double serial) const {
    const std::int64_t year = civil_from_serial(serial).y;
    if (broken) return {year, first_week(year)};
    const double week = week_start(serial, 0, first_day);
    if (week >= first_week(year + 1)) return {year + 1, first_week(year + 1)};
    if (week < first_week(year)) return {year - 1, first_week(year - 1)};
    return {year, first_week(year)};
  }
};

Value fn_year(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  return valid_serial(x) ? Value::number(static_cast<double>(civil_from_serial(x).y)) : Value::null();
}
Value fn_month(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  if (!valid_serial(x)) return Value::null();
  const unsigned m = civil_from_serial(x).m;
  return Value::dual(m, ix.month_names[m - 1]);
}
Value fn_day(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  return valid_serial(x) ? Value::number(civil_from_serial(x).d) : Value::null();
}
Value fn_week(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  if (!valid_serial(x)) return Value::null();
  const WeekRule rule(a, ix);
  const double start = rule.broken ? rule.first_week(civil_from_serial(x).y) : rule.year_of(x).second;
  return Value::number(static_cast<double>(floor_div(whole(week_start(x, 0, rule.first_day) - start), 7) + 1));
}
Value fn_week_year(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  if (!valid_serial(x)) return Value::null();
  return Value::number(static_cast<double>(WeekRule(a, ix).year_of(x).first));
}
Value fn_weekday(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  if (!valid_serial(x)) return Value::null();
  const std::int64_t first = floor_mod(whole(arg_or(a, 1, ix, ix.first_week_day)), 7);
  const std::int64_t pos = floor_mod(weekday_of(x) - first, 7);
  return Value::dual(static_cast<double>(pos), ix.day_names[static_cast<std::size_t>((pos + first) % 7)]);
}

// Date(x [, fmt]), Time, Timestamp: the number shown in the format (the app's by default).
template <int Kind>  // 0 date, 1 time, 2 timestamp
Value fn_format(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  const std::string fmt = a.size() > 1 && !a[1].is_null() ? shown_text(a[1]) : "";
  const std::string& own = Kind == 0 ? ix.date_format : Kind == 1 ? ix.time_format : ix.timestamp_format;
  return shown(x, ix, fmt.empty() ? own : fmt);
}
// Interval(x): a number of days as hours, minutes and seconds (h:mm:ss, hours past 24).
Value fn_interval(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  if (!std::isfinite(x) || std::fabs(x) > 1e9) return Value::null();
  const auto total = static_cast<std::int64_t>(std::llround(std::fabs(x) * 86400));
  const std::int64_t h = total / 3600, rest = total % 3600;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%lld:%02lld:%02lld", x < 0 ? "-" : "", static_cast<long long>(h),
                static_cast<long long>(rest / 60), static_cast<long long>(rest % 60));
  return Value::dual(x, buf);
}
// Date#(text [, fmt]) and the others: the text read in the format; NULL when it does not fit.
template <int Kind>  // 0 date, 1 time, 2 timestamp, 3 interval
Value fn_read(Args a, const Ix& ix) {
  const std::string t = shown_text(a[0]);
  const std::string fmt = a.size() > 1 && !a[1].is_null() ? shown_text(a[1]) : "";
  const std::string& own = Kind == 0   ? ix.date_format
                           : Kind == 1 ? ix.time_format
                           : Kind == 2 ? ix.timestamp_format
                                       : std::string("h:mm:ss");
  const double x = ix.read_date(t, fmt.empty() ? std::string_view(own) : std::string_view(fmt));
  return std::isnan(x) ? Value::null() : Value::dual(x, t);
}

Value fn_make_date(Args a, const Ix& ix) {
  const double y = ix.number(a[0]), m = arg_or(a, 1, ix, a.size() > 1 ? NAN : 1),
               d = arg_or(a, 2, ix, a.size() > 2 ? NAN : 1);
  if (!std::isfinite(y) || !std::isfinite(m) || !std::isfinite(d) || std::fabs(y) > 9999) return Value::null();
  const auto yi = static_cast<std::int64_t>(std::trunc(y)), mi = static_cast<std::int64_t>(std::trunc(m)),
             di = static_cast<std::int64_t>(std::trunc(d));
  if (yi < 1 || mi < 1 || mi > 12 || di < 1 || di > 31) return Value::null();
  const double serial = serial_from_civil(yi, static_cast<unsigned>(mi), static_cast<unsigned>(di));
  if (civil_from_serial(serial).d != di) return Value::null();  // 2/30 and the like
  return shown(serial, ix, ix.date_format);
}
Value fn_make_time(Args a, const Ix& ix) {
  const double h = ix.number(a[0]), m = arg_or(a, 1, ix, a.size() > 1 ? NAN : 0),
               s = arg_or(a, 2, ix, a.size() > 2 ? NAN : 0);
  if (std::isnan(h) || std::isnan(m) || std::isnan(s)) return Value::null();
  return shown((h * 3600 + m * 60 + s) / 86400.0, ix, ix.time_format);
}

// The local date and time now as a day number with a fraction.
double now_serial() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const double micros = static_cast<double>(
      std::chrono::duration_cast<std::chrono::microseconds>(now - std::chrono::system_clock::from_time_t(t)).count());
  std::tm local{};
  localtime_r(&t, &local);
  return serial_from_civil(local.tm_year + 1900, static_cast<unsigned>(local.tm_mon + 1),
                         static_cast<unsigned>(local.tm_mday)) +
         (local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec + micros / 1e6) / 86400.0;
}
Value fn_today(Args, const Ix& ix) { return shown(std::floor(now_serial()), ix, ix.date_format); }
Value fn_now(Args, const Ix& ix) { return shown(now_serial(), ix, ix.timestamp_format); }

// AddMonths(date, n [, mode]): n months on; a day past the new month's end falls on its last
// day (mode 1: a day from the 28th on keeps its distance from the month's end).
Value add_months(double x, double k, double mode, const Ix& ix) {
  if (!valid_serial(x) || std::isnan(k) || std::fabs(k) > 1e5) return Value::null();
  const std::int64_t month = month_index(x), target = month + whole(k);
  const double dom = civil_from_serial(x).d, frac = x - std::floor(x);
  const double old_len = month_start(month + 1) - month_start(month);
  const double new_len = month_start(target + 1) - month_start(target);
  double day = std::min(dom, new_len);
  if (mode == 1 && dom >= 28) day = std::max(new_len - (old_len - dom), 1.0);
  return shown(month_start(target) + day - 1 + frac, ix, ix.date_format);
}
Value fn_add_months(Args a, const Ix& ix) {
  return add_months(ix.number(a[0]), ix.number(a[1]), arg_or(a, 2, ix, 0), ix);
}
Value fn_add_years(Args a, const Ix& ix) { return add_months(ix.number(a[0]), ix.number(a[1]) * 12, 0, ix); }

// MonthStart/End(date [, period]); QuarterStart/End, YearStart/End(date [, period [, first
// month of the year]]) (FirstMonthOfYear when the last is not given).
template <std::int64_t Size, bool End>
Value fn_period(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  if (!valid_serial(x)) return Value::null();
  const double first = Size == 1 ? 1 : arg_or(a, 2, ix, ix.first_month_of_year);
  const std::int64_t start = period_start(Size, x, arg_or(a, 1, ix, 0), first);
  return shown(End ? month_start(start + Size) - kMs : month_start(start), ix, ix.date_format);
}
// MonthName(date [, period]): `Mon YYYY`; QuarterName(date [, period [, first month]]):
// `Mon-Mon YYYY`; the number is the period's first day.
template <std::int64_t Size>
Value fn_period_name(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  if (!valid_serial(x)) return Value::null();
  const double first = Size == 1 ? 1 : arg_or(a, 2, ix, ix.first_month_of_year);
  const std::int64_t start = period_start(Size, x, arg_or(a, 1, ix, 0), first);
  const auto m = static_cast<std::size_t>(floor_mod(start, 12));
  std::string text = ix.month_names[m];
  if (Size == 3) text.append(1, '-').append(ix.month_names[(m + 2) % 12]);
  text.append(1, ' ').append(std::to_string(floor_div(start, 12)));
  return Value::dual(month_start(start), text);
}
// WeekStart/WeekEnd(date [, period [, first week day]]) (FirstWeekDay by default).
template <bool End>
Value fn_week_bound(Args a, const Ix& ix) {
  const double x = ix.number(a[0]);
  if (!valid_serial(x)) return Value::null();
  const double start =
      week_start(x, arg_or(a, 1, ix, 0), floor_mod(whole(arg_or(a, 2, ix, ix.first_week_day)), 7));
  return shown(End ? start + 7 - kMs : start, ix, ix.date_format);
}
// InYear/InMonth(time, base, period [, first month]): whether the time lies in the year or
// month holding base, `period` of them on; InYearToDate: in that year up to the end of base's
// day (moved as far). No number among them: false.
template <std::int64_t Size, bool ToDate>
Value fn_in_period(Args a, const Ix& ix) {
  const double t = ix.number(a[0]), base = ix.number(a[1]), shift = ix.number(a[2]);
  if (std::isnan(t) || !valid_serial(base) || std::isnan(shift) || std::fabs(shift) > 1e5) return Value::boolean(false);
  const double first = Size == 1 ? 1 : arg_or(a, 3, ix, ix.first_month_of_year);
  const std::int64_t start = period_start(Size, base, shift, first);
  const double low = month_start(start);
  double high = month_start(start + Size);
  if (ToDate) high = low + (std::floor(base) - month_start(period_start(Size, base, 0, first))) + 1;
  return Value::boolean(t >= low && t < high);
}
// NetWorkDays(start, end [, holiday, …]): Monday-to-Friday days from start to end, both
// included, less the holidays among them (each once); 0 when end is before start.
std::int64_t weekdays_before(std::int64_t day) {
  const std::int64_t d = day - 2;  // day 2 (1900-01-01) was a Monday
  return floor_div(d, 7) * 5 + std::min<std::int64_t>(floor_mod(d, 7), 5);
}
Value fn_network_days(Args a, const Ix& ix) {
  const double s = ix.number(a[0]), e = ix.number(a[1]);
  if (!valid_serial(s) || !valid_serial(e)) return Value::null();
  const std::int64_t lo = whole(s), hi = whole(e);
  std::int64_t n = std::max<std::int64_t>(weekdays_before(hi + 1) - weekdays_before(lo), 0);
  std::set<std::int64_t> holidays;
  for (std::size_t i = 2; i < a.size(); ++i) {
    const double h = ix.number(a[i]);
    if (valid_serial(h) && weekday_of(h) < 5) holidays.insert(whole(h));
  }
  for (const std::int64_t h : holidays) n -= lo <= h && h <= hi ? 1 : 0;
  return Value::number(static_cast<double>(n));
}

const ScalarFunction kCalendar[] = {
    {"Year", 1, 1, true, fn_year},
    {"Month", 1, 1, true, fn_month},
    {"Day", 1, 1, true, fn_day},
    {"Week", 1, 4, false, fn_week},
    {"WeekYear", 1, 4, false, fn_week_year},
    {"WeekDay", 1, 2, false, fn_weekday},
    {"Date", 1, 2, false, fn_format<0>},
    {"Time", 1, 2, false, fn_format<1>},
    {"Timestamp", 1, 2, false, fn_format<2>},
    {"Interval", 1, 2, false, fn_interval},
    {"Date#", 1, 2, true, fn_read<0>},
    {"Time#", 1, 2, true, fn_read<1>},
    {"Timestamp#", 1, 2, true, fn_read<2>},
    {"Interval#", 1, 2, true, fn_read<3>},
    {"MakeDate", 1, 3, false, fn_make_date},
    {"MakeTime", 1, 3, false, fn_make_time},
    {"Today", 0, 1, false, fn_today},
    {"Now", 0, 1, false, fn_now},
    {"AddMonths", 2, 3, false, fn_add_months},
    {"AddYears", 2, 2, false, fn_add_years},
    {"MonthStart", 1, 2, false, fn_period<1, false>},
    {"MonthEnd", 1, 2, false, fn_period<1, true>},
    {"QuarterStart", 1, 3, false, fn_period<3, false>},
    {"QuarterEnd", 1, 3, false, fn_period<3, true>},
    {"YearStart", 1, 3, false, fn_period<12, false>},
    {"YearEnd", 1, 3, false, fn_period<12, true>},
    {"MonthName", 1, 2, false, fn_period_name<1>},
    {"QuarterName", 1, 3, false, fn_period_name<3>},
    {"WeekStart", 1, 3, false, fn_week_bound<false>},
    {"WeekEnd", 1, 3, false, fn_week_bound<true>},
    {"InYear", 3, 4, false, fn_in_period<12, false>},
    {"InMonth", 3, 3, false, fn_in_period<1, false>},
    {"InYearToDate", 3, 4, false, fn_in_period<12, true>},
    {"NetWorkDays", 2, kAny, false, fn_network_days},
};

}  // namespace

std::span<const ScalarFunction> calendar_functions() { return kCalendar; }

}  // namespace assoc
