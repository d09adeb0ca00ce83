#pragma once
// The number interpretation variables of an app (DecimalSep, DateFormat, FirstWeekDay, …) and
// what they steer: reading texts as numbers, money, dates and times, and writing numbers and
// dates in formats. A script sets them with SET; its LOAD functions and the app's charts use
// the same ones (chart-expressions §6: Week and WeekDay follow the app's variables).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "assoc/value.hpp"

namespace assoc {

// Day numbers count days from 1899-12-30, as Qlik's; a fraction is the time of day.
inline constexpr std::int64_t kUnixEpochSerial = 25569;  // 1970-01-01
struct CivilDate {
  std::int64_t y;
  unsigned m, d;  // 1-based
};
CivilDate civil_from_serial(double serial);
double serial_from_civil(std::int64_t y, unsigned m, unsigned d);
// A day number no calendar function should meet: NaN, infinite, or beyond ±8000 years.
bool valid_serial(double x);

// A date/time format cut into tokens: YYYY YY MMMM MMM MM M DD D WWWW WWW hh h mm ss fff TT
// (also tt), literal characters, and [ … ] groups (optional when reading).
struct DateToken {
  enum class Kind : std::uint8_t {
    kLiteral, kYear4, kYear2, kMonthLong, kMonthShort, kMonth2, kMonth1, kDay2, kDay1,
    kWeekdayLong, kWeekdayShort, kHour2, kHour1, kMinute, kSecond, kFraction, kAmPm, kGroup,
  };
  Kind kind = Kind::kLiteral;
  char literal = 0;
  std::vector<DateToken> group;
};
std::vector<DateToken> date_tokens(std::string_view fmt);

class Interpretation {
 public:
  Interpretation();  // en-US, as a new app's script sets them

  // The defaults with the interpretation variables among `variables` (name, text) applied;
  // others are ignored, and a whole-number setting that is not a number keeps its default.
  static Interpretation from_variables(const std::vector<std::pair<std::string, std::string>>& variables);
  static const Interpretation& defaults();

  std::string thousand = ",", decimal = ".", money_thousand = ",", money_decimal = ".";
  std::string money_format = "$#,##0.00;($#,##0.00)";
  std::string date_format = "M/D/YYYY", time_format = "h:mm:ss TT";
  std::string timestamp_format = "M/D/YYYY h:mm:ss[.fff] TT";
  int first_week_day = 6;  // 0 Monday … 6 Sunday
  bool broken_weeks = true;
  int reference_day = 0;
  int first_month_of_year = 1;
  std::array<std::string, 12> month_names, long_month_names;
  std::array<std::string, 7> day_names, long_day_names;  // Monday first
  std::string currency;                                   // MoneyFormat's symbol ("$")

  // A value's number: its numeric part, else its text read as `read` reads it; NaN otherwise.
  double number(const Value& v) const;
  // The number a text stands for, trying a plain number (DecimalSep, ThousandSep), money,
  // then DateFormat, TimestampFormat, TimeFormat and the ISO forms; NaN when none fits.
  double read(std::string_view text) const;
  // A date/time text in `fmt` as a day number with the time as its fraction; NaN otherwise.
  double read_date(std::string_view text, std::string_view fmt) const;
  // A number in a `#,##0.00`-style format (`;` separates the negative one); empty separators
  // are the interpretation's own. Without a format: the number's plain text.
  std::string format_number(double v, std::string_view fmt, std::string_view dec = {},
                            std::string_view thou = {}) const;
  // A day number in a date/time format (DateFormat when `fmt` is empty).
  std::string format_date(double serial, std::string_view fmt = {}) const;

 private:
  double read_tokens(std::string_view text, const std::vector<DateToken>& tokens) const;
  // The tokens of `fmt`: those of the interpretation's own formats are kept, others are cut
  // on each call (a thread's last one is kept too).
  const std::vector<DateToken>& tokens_of(std::string_view fmt) const;
  void refresh();  // derived members after the variables change
  std::vector<std::vector<DateToken>> read_patterns_;
};

// A number written with a decimal separator and optional thousand groups (1,234.5), or NaN.
double read_plain(std::string_view s, std::string_view decimal, std::string_view thousand);

}  // namespace assoc
