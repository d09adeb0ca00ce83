// The function library for Python: an app's number interpretation, and each registered scalar
// function called over vectors of values (a load script's functions are these).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <string>
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

// One argument: `count` values (1: the same for every row), read while the GIL is held.
struct Column {
  std::vector<Value> values;
  const Value& at(std::size_t row) const { return values.size() == 1 ? values[0] : values[row]; }
};

Column column_of(const py::handle& arg, std::size_t n, std::size_t position) {
  const auto pair = arg.cast<py::tuple>();
  if (pair.size() != 2) throw Error("argument " + std::to_string(position) + ": (numbers, texts) expected");
  const Numbers nums = Numbers::ensure(pair[0]);
  if (!nums || nums.ndim() != 1) throw Error("argument " + std::to_string(position) + ": numbers must be a vector");
  const auto count = static_cast<std::size_t>(nums.shape(0));
  if (count != 1 && count != n)
    throw Error("argument " + std::to_string(position) + " has " + std::to_string(count) + " values, not 1 or " +
                std::to_string(n));
  Column c;
  c.values.resize(count);
  const double* x = nums.data();
  for (std::size_t i = 0; i < count; ++i) c.values[i].num = std::isfinite(x[i]) ? x[i] : std::nan("");
  if (!pair[1].is_none()) {
    const auto texts = pair[1].cast<py::sequence>();
    if (static_cast<std::size_t>(py::len(texts)) != count)
      throw Error("argument " + std::to_string(position) + ": texts and numbers differ in length");
    for (std::size_t i = 0; i < count; ++i) {
      const py::handle t = texts[i];
      if (t.is_none()) continue;
      c.values[i].text = t.cast<std::string>();
      c.values[i].has_text = true;
    }
  }
  return c;
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
        std::vector<Value> out(n);
        {
          py::gil_scoped_release release;
          parallel_ranges(n, 1024, [&](std::size_t b, std::size_t e) {
            std::vector<Value> row(columns.size());
            for (std::size_t r = b; r < e; ++r) {
              for (std::size_t i = 0; i < columns.size(); ++i) row[i] = columns[i].at(r);
              out[r] = call_scalar(*f, row, ix);
            }
          });
        }
        Numbers nums(static_cast<py::ssize_t>(n));
        double* x = nums.mutable_data();
        bool any_text = false;
        for (std::size_t r = 0; r < n; ++r) {
          x[r] = out[r].num;
          any_text = any_text || out[r].has_text;
        }
        if (!any_text) return py::tuple(py::make_tuple(nums, py::none()));
        // One Python text per distinct text: a column of few values shares them.
        py::list texts(n);
        std::unordered_map<std::string, py::object> made;
        for (std::size_t r = 0; r < n; ++r) {
          if (!out[r].has_text) {
            texts[r] = py::none();
            continue;
          }
          auto [it, fresh] = made.try_emplace(out[r].text);
          if (fresh) it->second = py::str(out[r].text);
          texts[r] = it->second;
          if (made.size() > 65536) made.clear();
        }
        return py::tuple(py::make_tuple(nums, texts));
      },
      py::arg("name"), py::arg("args"), py::arg("n"), py::arg("interpretation"),
      "Calls a scalar function over n rows: each argument a (numbers, texts or None) pair of n "
      "values or of one; answers (numbers, texts or None).");
}

}  // namespace assoc::py_bind
