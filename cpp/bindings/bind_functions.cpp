// The function library for Python: an app's number interpretation, and each registered scalar
// function called over vectors of values (a load script's functions are these).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "assoc/functions.hpp"
#include "assoc/interpretation.hpp"
#include "assoc/thread_pool.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

using Numbers = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::vector<std::pair<std::string, std::string>> variables_of(const py::handle& variables) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto item : variables.cast<py::dict>()) {
    if (!py::isinstance<py::str>(item.first) || !py::isinstance<py::str>(item.second))
      throw Error("interpretation variables must be names and texts");
    out.emplace_back(item.first.cast<std::string>(), item.second.cast<std::string>());
  }
  return out;
}

py::object number_or_none(double x) { return std::isnan(x) ? py::none() : py::object(py::float_(x)); }

// One argument: `count` values (1: the same for every row), read while the GIL is held. Its
// texts are views of the Python strings, kept alive by `text_owner` (str is immutable, so they
// are read without the GIL too).
struct Column {
  Numbers array;  // keeps `nums` alive
  py::object text_owner;
  const double* nums = nullptr;
  std::size_t count = 0;
  std::vector<std::string_view> texts;  // empty when no value has a text
  std::vector<std::uint8_t> has_text;

  std::size_t index(std::size_t row) const { return count == 1 ? 0 : row; }
  void fill(std::size_t row, Value& v) const {
    const std::size_t i = index(row);
    const double x = nums[i];
    v.num = std::isfinite(x) ? x : std::nan("");
    v.has_text = !has_text.empty() && has_text[i] != 0;
    if (v.has_text) {
      v.text.assign(texts[i]);
    } else {
      v.text.clear();
    }
  }
  OperandColumn operand() const {
    return OperandColumn{nums, count, texts.empty() ? nullptr : texts.data(), has_text.empty() ? nullptr : has_text.data()};
  }
};

// The texts of an argument: a NumPy array of objects is read in place, another sequence
// through a list; each item a str or None.
void read_texts(const py::handle& arg, Column& c, std::size_t position) {
  PyObject* const* items = nullptr;
  std::size_t size = 0;
  if (py::isinstance<py::array>(arg) && py::reinterpret_borrow<py::array>(arg).dtype().kind() == 'O') {
    auto arr = py::array::ensure(arg, py::array::c_style);
    if (!arr || arr.ndim() != 1) throw Error("argument " + std::to_string(position) + ": texts must be a vector");
    items = static_cast<PyObject* const*>(arr.data());
    size = static_cast<std::size_t>(arr.shape(0));
    c.text_owner = std::move(arr);
  } else {
    py::object list = py::reinterpret_steal<py::object>(PySequence_Fast(arg.ptr(), "texts must be a sequence"));
    if (!list) throw py::error_already_set();
    items = PySequence_Fast_ITEMS(list.ptr());
    size = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(list.ptr()));
    c.text_owner = std::move(list);
  }
  if (size != c.count) throw Error("argument " + std::to_string(position) + ": texts and numbers differ in length");
  for (std::size_t i = 0; i < size; ++i) {
    PyObject* t = items[i];
    if (t == Py_None) continue;
    if (!PyUnicode_Check(t)) throw Error("argument " + std::to_string(position) + ": texts must be str or None");
    Py_ssize_t len = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(t, &len);
    if (utf8 == nullptr) throw py::error_already_set();
    if (c.texts.empty()) {
      c.texts.resize(c.count);
      c.has_text.assign(c.count, 0);
    }
    c.texts[i] = std::string_view(utf8, static_cast<std::size_t>(len));
    c.has_text[i] = 1;
  }
}

Column column_of(const py::handle& arg, std::size_t n, std::size_t position) {
  const auto pair = arg.cast<py::tuple>();
  if (pair.size() != 2) throw Error("argument " + std::to_string(position) + ": (numbers, texts) expected");
  Column c;
  c.array = Numbers::ensure(pair[0]);
  if (!c.array || c.array.ndim() != 1)
    throw Error("argument " + std::to_string(position) + ": numbers must be a vector");
  c.count = static_cast<std::size_t>(c.array.shape(0));
  if (c.count != 1 && c.count != n)
    throw Error("argument " + std::to_string(position) + " has " + std::to_string(c.count) + " values, not 1 or " +
                std::to_string(n));
  c.nums = c.array.data();
  if (!pair[1].is_none()) read_texts(pair[1], c, position);
  return c;
}

// A NumPy array of n objects: each row's text (a str) or None.
py::array object_texts(std::size_t n, const OperatorTexts& texts) {
  py::array out = py::module_::import("numpy").attr("empty")(n, py::arg("dtype") = "object");
  auto** slots = static_cast<PyObject**>(out.mutable_data());
  for (std::size_t r = 0; r < n; ++r) {
    if (!texts.has_text[r]) continue;
    const std::size_t begin = r == 0 ? 0 : texts.ends[r - 1];
    PyObject* s = PyUnicode_DecodeUTF8(texts.chars.data() + begin, static_cast<Py_ssize_t>(texts.ends[r] - begin), "replace");
    if (s == nullptr) throw py::error_already_set();
    Py_XDECREF(slots[r]);
    slots[r] = s;
  }
  return out;
}

// The distinct combinations of argument values over n rows (values equal in number and text
// are one). `at` empty means every row is its own combination (no value repeats enough).
void distinct_rows(const std::vector<Column>& columns, std::size_t n, std::vector<std::uint32_t>& at,
                   std::vector<std::size_t>& rows) {
  std::vector<const Column*> varying;
  for (const Column& c : columns)
    if (c.count != 1) varying.push_back(&c);
  if (varying.empty() || n < 64) {
    at.clear();
    rows.resize(n);
    for (std::size_t r = 0; r < n; ++r) rows[r] = r;
    return;
  }
  // Each varying column's rows coded by value, then the codes combined in one 64-bit key.
  struct Key {
    std::uint64_t bits;
    bool has_text;
    std::string_view text;
    bool operator==(const Key& o) const { return bits == o.bits && has_text == o.has_text && text == o.text; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::uint64_t>{}(k.bits) ^ (k.has_text ? std::hash<std::string_view>{}(k.text) * 31 : 0);
    }
  };
  auto every_row = [&] {
    at.clear();
    rows.resize(n);
    for (std::size_t r = 0; r < n; ++r) rows[r] = r;
  };
  std::vector<std::uint64_t> combined(n, 0);
  std::uint64_t radix = 1;
  for (const Column* c : varying) {
    std::unordered_map<Key, std::uint32_t, KeyHash> codes;
    for (std::size_t r = 0; r < n; ++r) {
      // A column whose first rows barely repeat (an id) is not worth numbering.
      if (r == 4096 && codes.size() * 4 > r * 3) return every_row();
      const double x = c->nums[r];
      std::uint64_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      if (!std::isfinite(x)) bits = 0x7FF8000000000000ULL;
      const bool text = !c->has_text.empty() && c->has_text[r] != 0;
      const auto [it, fresh] = codes.try_emplace(Key{bits, text, text ? c->texts[r] : std::string_view()},
                                                 static_cast<std::uint32_t>(codes.size()));
      combined[r] += radix * it->second;
    }
    // Mostly distinct, or too many combinations to number: every row once.
    if (codes.size() * 2 > n || radix > (std::uint64_t{1} << 62) / std::max<std::size_t>(codes.size(), 1))
      return every_row();
    radix *= codes.size();
  }
  std::unordered_map<std::uint64_t, std::uint32_t> seen;
  at.resize(n);
  rows.clear();
  for (std::size_t r = 0; r < n; ++r) {
    const auto [it, fresh] = seen.try_emplace(combined[r], static_cast<std::uint32_t>(rows.size()));
    if (fresh) rows.push_back(r);
    at[r] = it->second;
  }
}

}  // namespace

void bind_functions(py::module_& m) {
  py::class_<Interpretation>(m, "Interpretation",
                             "An app's number interpretation variables: how texts read as numbers and dates, "
                             "and how numbers and dates are written.")
      .def(py::init([](const py::dict& variables) { return Interpretation::from_variables(variables_of(variables)); }),
           py::arg("variables"))
      .def_readonly("thousand", &Interpretation::thousand)
      .def_readonly("decimal", &Interpretation::decimal)
      .def_readonly("money_thousand", &Interpretation::money_thousand)
      .def_readonly("money_decimal", &Interpretation::money_decimal)
      .def_readonly("money_format", &Interpretation::money_format)
      .def_readonly("currency", &Interpretation::currency)
      .def_readonly("date_format", &Interpretation::date_format)
      .def_readonly("time_format", &Interpretation::time_format)
      .def_readonly("timestamp_format", &Interpretation::timestamp_format)
      .def_readonly("first_week_day", &Interpretation::first_week_day)
      .def_readonly("broken_weeks", &Interpretation::broken_weeks)
      .def_readonly("reference_day", &Interpretation::reference_day)
      .def_readonly("first_month_of_year", &Interpretation::first_month_of_year)
      .def_property_readonly("month_names",
                             [](const Interpretation& ix) { return std::vector<std::string>(ix.month_names.begin(), ix.month_names.end()); })
      .def_property_readonly("long_month_names",
                             [](const Interpretation& ix) {
                               return std::vector<std::string>(ix.long_month_names.begin(), ix.long_month_names.end());
                             })
      .def_property_readonly("day_names",
                             [](const Interpretation& ix) { return std::vector<std::string>(ix.day_names.begin(), ix.day_names.end()); })
      .def_property_readonly("long_day_names",
                             [](const Interpretation& ix) {
                               return std::vector<std::string>(ix.long_day_names.begin(), ix.long_day_names.end());
                             })
      .def(
          "read", [](const Interpretation& ix, const std::string& text) { return number_or_none(ix.read(text)); },
          py::arg("text"), "The number a text stands for (number, money, date, time), or None.")
      .def(
          "read_date",
          [](const Interpretation& ix, const std::string& text, const std::string& fmt) {
            return number_or_none(ix.read_date(text, fmt));
          },
          py::arg("text"), py::arg("format"), "A date/time text in a format as a day number, or None.")
      .def(
          "format_number",
          [](const Interpretation& ix, double value, const std::string& fmt, const std::string& decimal,
             const std::string& thousand) { return ix.format_number(value, fmt, decimal, thousand); },
          py::arg("value"), py::arg("format") = "", py::arg("decimal") = "", py::arg("thousand") = "",
          "A number in a #,##0.00-style format (its plain text without one).")
      .def(
          "format_date",
          [](const Interpretation& ix, double serial, const std::string& fmt) { return ix.format_date(serial, fmt); },
          py::arg("serial"), py::arg("format") = "", "A day number in a date/time format (DateFormat without one).");

  m.def(
      "read_plain",
      [](const std::string& text, const std::string& decimal, const std::string& thousand) {
        return number_or_none(read_plain(text, decimal, thousand));
      },
      py::arg("text"), py::arg("decimal") = ".", py::arg("thousand") = "",
      "A number written with a decimal separator and optional thousand groups, or None.");

  m.def(
      "scalar_functions",
      [] {
        std::vector<std::tuple<std::string, int, int>> out;
        for (const ScalarFunction* f : scalar_functions()) out.emplace_back(f->name, f->min_args, f->max_args);
        return out;
      },
      "Every scalar function of the engine: (name, fewest arguments, most arguments; 255: any).");

  m.def(
      "call_function",
      [](const std::string& name, const py::list& args, std::size_t n, const Interpretation& ix) {
        const ScalarFunction* f = find_scalar_function(name);
        if (f == nullptr) throw Error("unknown function " + name);
        if (args.size() < f->min_args || (f->max_args != 255 && args.size() > f->max_args))
          throw Error(std::string(f->name) + " takes " + std::to_string(f->min_args) + ".." +
                      (f->max_args == 255 ? std::string("any number of") : std::to_string(f->max_args)) +
                      " arguments, not " + std::to_string(args.size()));
        std::vector<Column> columns;
        columns.reserve(args.size());
        for (std::size_t i = 0; i < args.size(); ++i) columns.push_back(column_of(args[i], n, i + 1));
        // Each distinct combination of argument values is computed once (a calendar over a
        // date column, a label per amount band): rows[k] is combination k's first row, at[r]
        // row r's combination.
        std::vector<std::uint32_t> at;
        std::vector<std::size_t> rows;
        // The values computed, one per combination: numbers, and texts once one has a text.
        std::vector<double> result_num;
        std::vector<std::uint8_t> result_has_text;
        std::vector<std::string> result_text;
        {
          py::gil_scoped_release release;
          distinct_rows(columns, n, at, rows);
          const std::size_t m = rows.size();
          result_num.resize(m);
          result_has_text.assign(m, 0);
          std::once_flag texts_made;
          parallel_ranges(m, 64, [&](std::size_t b, std::size_t e) {
            std::vector<Value> row(columns.size());
            for (std::size_t k = b; k < e; ++k) {
              for (std::size_t i = 0; i < columns.size(); ++i) columns[i].fill(rows[k], row[i]);
              Value v = call_scalar(*f, row, ix);
              result_num[k] = v.num;
              if (v.has_text) {
                std::call_once(texts_made, [&] { result_text.resize(m); });
                result_text[k] = std::move(v.text);
                result_has_text[k] = 1;
              }
            }
          }, nullptr, 256);
        }
        const auto combination = [&](std::size_t r) { return at.empty() ? r : at[r]; };
        Numbers nums(static_cast<py::ssize_t>(n));
        double* x = nums.mutable_data();
        for (std::size_t r = 0; r < n; ++r) x[r] = result_num[combination(r)];
        if (result_text.empty()) return py::tuple(py::make_tuple(nums, py::none()));
        // One Python text per computed value, shared by the rows that have it.
        std::vector<py::object> made(result_num.size());
        for (std::size_t k = 0; k < made.size(); ++k)
          made[k] = result_has_text[k] ? py::object(py::str(result_text[k])) : py::object(py::none());
        py::list texts(n);
        for (std::size_t r = 0; r < n; ++r) texts[r] = made[combination(r)];
        return py::tuple(py::make_tuple(nums, texts));
      },
      py::arg("name"), py::arg("args"), py::arg("n"), py::arg("interpretation"),
      "Calls a scalar function over n rows: each argument a (numbers, texts or None) pair of n "
      "values or of one; answers (numbers, texts or None).");

  m.def(
      "apply_operator",
      [](const std::string& name, const py::list& args, std::size_t n, const Interpretation& ix) {
        ExprOp op{};
        if (!operator_of(name, args.size(), op))
          throw Error("no operator " + name + " of " + std::to_string(args.size()) + " operands");
        std::vector<Column> columns;
        std::vector<OperandColumn> operands;
        for (std::size_t i = 0; i < args.size(); ++i) columns.push_back(column_of(args[i], n, i + 1));
        for (const Column& c : columns) operands.push_back(c.operand());
        Numbers nums(static_cast<py::ssize_t>(n));
        double* out = nums.mutable_data();
        OperatorTexts result;
        {
          py::gil_scoped_release release;
          result = apply_operator(op, operands, n, ix, out);
        }
        if (result.has_text.empty()) return py::tuple(py::make_tuple(nums, py::none()));
        return py::tuple(py::make_tuple(nums, object_texts(n, result)));
      },
      py::arg("op"), py::arg("args"), py::arg("n"), py::arg("interpretation"),
      "Applies an operator (+ - * / & = <> < <= > >= like precedes follows and or xor; - and not "
      "of one operand) over n rows, as charts apply it: each operand a (numbers, texts or None) "
      "pair of n values or of one; answers (numbers, texts as an object array, or None).");
}

}  // namespace assoc::py_bind
