// Values between Python and the engine: assoc.Dual, Python values read into cells, and
// symbols converted back to int, float, str or Dual; measure cells as a data page holds them.
#include <pybind11/numpy.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "assoc/error.hpp"
#include "assoc/value_order.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

// Doubles up to 2^53 hold every integer exactly: such a number reads back as a Python int.
bool is_integral(double d) { return d == std::trunc(d) && std::fabs(d) < 9007199254740992.0; }

py::object number_object(const Dual& d) {
  if (d.integral) return py::int_(static_cast<long long>(d.number));
  return py::float_(d.number);
}

// A Dual's number from Python: an int stays an int (when a double holds it exactly).
Dual make_dual(const py::object& number, std::string text) {
  if (!PyNumber_Check(number.ptr())) throw Error("a Dual's number must be an int or a float");
  const bool is_int = PyIndex_Check(number.ptr()) != 0;
  double d;
  try {
    d = number.cast<double>();
  } catch (const py::cast_error&) {
    throw Error("cannot read " + std::string(py::str(py::type::of(number))) + " as a number");
  }
  return Dual{d, std::move(text), is_int && is_integral(d) && py::int_(static_cast<long long>(d)).equal(number)};
}

}  // namespace

void Cells::add(const py::handle& v, const std::string& field) {
  if (v.is_none()) {
    numbers.push_back(std::nan(""));
    kinds.push_back(kNumber);
  } else if (py::isinstance<py::str>(v)) {
    numbers.push_back(std::nan(""));
    texts.push_back(v.cast<std::string>());
    kinds.push_back(kText);
  } else if (py::isinstance<Dual>(v)) {
    const Dual& d = v.cast<const Dual&>();
    numbers.push_back(d.number);
    texts.push_back(d.text);
    kinds.push_back(kDual);
  } else if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v) ||
             PyNumber_Check(v.ptr())) {
    try {
      numbers.push_back(v.cast<double>());
    } catch (const py::cast_error&) {
      throw Error(field + "cannot read " + std::string(py::str(py::type::of(v))) + " as a number");
    }
    kinds.push_back(kNumber);
  } else {
    throw Error(field + "unsupported value of type " + std::string(py::str(py::type::of(v))) +
                " (use None, int, float, str or assoc.Dual)");
  }
}

std::vector<DualView> Cells::views() const {
  std::vector<DualView> out;
  out.reserve(kinds.size());
  std::size_t t = 0;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i] == kNumber) {
      out.push_back(DualView::of_number(numbers[i]));
    } else if (kinds[i] == kText) {
      out.push_back(DualView::of_text(texts[t++]));
    } else {
      out.push_back(DualView::of_dual(numbers[i], texts[t++]));
    }
  }
  return out;
}

void Cells::add_to(ColumnBuilder& column) const {
  if (texts.empty()) {  // numbers and NULLs alone: interned at once
    column.add_numbers(numbers.data(), numbers.size());
    return;
  }
  column.reserve(kinds.size());
  std::size_t t = 0;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i] == kNumber) {
      column.add_number(numbers[i]);
    } else if (kinds[i] == kText) {
      column.add_text(texts[t++]);
    } else {
      column.add_dual(numbers[i], texts[t++]);
    }
  }
}

py::object symbol_to_python(const SymbolTable& symbols, std::uint32_t i) {
  const bool num = symbols.has_number(i);
  const bool txt = symbols.has_text(i);
  const double d = symbols.number(i);
  if (num && txt) return py::cast(Dual{d, std::string(symbols.text(i)), is_integral(d)});
  if (txt) return py::str(symbols.text(i).data(), symbols.text(i).size());
  if (is_integral(d)) return py::int_(static_cast<long long>(d));
  return py::float_(d);
}

namespace {

// Python's repr of a finite double: its shortest digits that read back, in fixed notation when
// the decimal exponent is in [-4, 16) (with ".0" when no fraction is left), else as d.ddde+XX.
std::string python_float_repr(double v) {
  char sci[40];
  const auto s = std::to_chars(sci, sci + sizeof sci, v, std::chars_format::scientific);
  const char* e = std::find(sci, s.ptr, 'e');
  int exponent = 0;
  std::from_chars(e + (e[1] == '+' ? 2 : 1), s.ptr, exponent);
  if (exponent < -4 || exponent >= 16) return std::string(sci, s.ptr);
  char fixed[48];
  const auto f = std::to_chars(fixed, fixed + sizeof fixed - 2, v, std::chars_format::fixed);
  std::string out(fixed, f.ptr);
  if (out.find('.') == std::string::npos) out += ".0";
  return out;
}

// A finite or infinite number's text as lists show it (Python's value_text): a whole number
// below 1e15 as an integer, any other in %.15g. Written into `buf`; returns its length.
std::size_t write_value_text(double v, char (&buf)[48]) {
  if (v == std::trunc(v) && std::fabs(v) < 1e15)
    return static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v)).ptr - buf);
  return static_cast<std::size_t>(std::snprintf(buf, sizeof buf, "%.15g", v));
}

}  // namespace

py::tuple symbol_texts(const SymbolTable& symbols) {
  const std::uint32_t n = symbols.size();
  py::array_t<double> numbers(static_cast<py::ssize_t>(n));
  double* number = numbers.mutable_data();
  py::list texts(n);
  char buf[48];
  for (std::uint32_t i = 0; i < n; ++i) {
    // Other threads have the GIL in turn between batches: a field may hold millions.
    if ((i & 0xFFFF) == 0xFFFF) py::gil_scoped_release let_others_run;
    const double d = symbols.number(i);
    number[i] = d;
    PyObject* text;
    if (symbols.has_text(i)) {
      const std::string_view t = symbols.text(i);
      text = PyUnicode_DecodeUTF8(t.data(), static_cast<Py_ssize_t>(t.size()), nullptr);
    } else {
      const std::size_t size = is_integral(d) ? static_cast<std::size_t>(
                                                    std::to_chars(buf, buf + sizeof buf, static_cast<long long>(d)).ptr - buf)
                                              : write_value_text(d, buf);
      text = PyUnicode_FromStringAndSize(buf, static_cast<Py_ssize_t>(size));
    }
    if (text == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(texts.ptr(), static_cast<Py_ssize_t>(i), text);
  }
  return py::make_tuple(std::move(texts), std::move(numbers));
}

namespace {

// A measure cell's JSON (NxCell, state L), as the service writes it: qText as lists show the
// number; qNum a whole number below 2^53 as an integer, else Python's repr of the float; NULL
// (NaN) as "-"; infinities as inf / "Infinity".
void append_measure_cell(std::string& out, double v) {
  if (std::isnan(v)) {
    out += R"({"qText":"-","qNum":"NaN","qElemNumber":0,"qState":"L","qIsNull":true})";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? R"({"qText":"inf","qNum":"Infinity","qElemNumber":0,"qState":"L"})"
                 : R"({"qText":"-inf","qNum":"-Infinity","qElemNumber":0,"qState":"L"})";
    return;
  }
  char buf[48];
  out += R"({"qText":")";
  out.append(buf, write_value_text(v, buf));
  out += R"(","qNum":)";
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {
    out.append(buf, std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v)).ptr);
  } else {
    out += python_float_repr(v);
  }
  out += R"(,"qElemNumber":0,"qState":"L"})";
}

// A str's UTF-8 bytes (CPython keeps them with the string once asked).
std::string_view utf8_of(PyObject* text) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_Check(text) ? PyUnicode_AsUTF8AndSize(text, &n) : nullptr;
  if (p == nullptr) {
    PyErr_Clear();
    throw Error("cells need texts");
  }
  return {p, static_cast<std::size_t>(n)};
}

// A value cell's JSON (NxCell) from its prefix (the symbol's cell up to the state's text, or
// NULL's) and the name of its state.
void append_value_cell(std::string& out, std::string_view prefix, std::string_view state) {
  out += prefix;
  out += state;
  out += "\"}";
}

}  // namespace

void bind_values(py::module_& m) {
  m.def(
      "cells_json",
      [](const py::list& prefixes, const py::str& null_prefix,
         const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& codes,
         const py::array_t<std::int8_t, py::array::c_style | py::array::forcecast>& states,
         const py::sequence& state_names, bool wrap) {
        const auto n = static_cast<std::size_t>(codes.size());
        if (static_cast<std::size_t>(states.size()) != n) throw Error("cells_json needs a state per code");
        std::vector<std::string_view> names;
        for (const py::handle name : state_names) names.push_back(utf8_of(name.ptr()));
        const std::string_view null_cell = utf8_of(null_prefix.ptr());
        const auto n_prefixes = static_cast<std::int64_t>(prefixes.size());
        const std::int64_t* code = codes.data();
        const std::int8_t* state = states.data();
        py::list out(n);
        std::string cell;
        for (std::size_t i = 0; i < n; ++i) {
          if (code[i] >= n_prefixes || state[i] < 0 || static_cast<std::size_t>(state[i]) >= names.size())
            throw Error("cells_json: a code or state out of range");
          cell.clear();
          if (wrap) cell += '[';
          append_value_cell(cell, code[i] < 0 ? null_cell : utf8_of(PyList_GET_ITEM(prefixes.ptr(), code[i])),
                            names[static_cast<std::size_t>(state[i])]);
          if (wrap) cell += ']';
          PyObject* text = PyUnicode_DecodeUTF8(cell.data(), static_cast<Py_ssize_t>(cell.size()), nullptr);
          if (text == nullptr) throw py::error_already_set();
          PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), text);
        }
        return out;
      },
      py::arg("prefixes"), py::arg("null_prefix"), py::arg("codes"), py::arg("states"), py::arg("state_names"),
      py::arg("wrap"),
      "Each cell's JSON: the prefix of its code (negative: `null_prefix`), the name of its state\n"
      "(an index into `state_names`) and the closing quote and brace; `wrap`: each in a row.");
  m.def(
      "page_rows_json",
      [](const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& index, const py::list& columns,
         const py::str& null_prefix, const py::sequence& state_names, std::int8_t null_state) {
        // A column: a dimension as (codes, states, prefixes), that is each cube row's symbol
        // index (negative: NULL), each symbol's state and each symbol's cell up to its state's
        // text; or a measure as its values.
        struct Column {
          py::array_t<std::int64_t, py::array::c_style | py::array::forcecast> codes;
          py::array_t<std::int8_t, py::array::c_style | py::array::forcecast> states;
          py::list prefixes;
          py::array_t<double, py::array::c_style | py::array::forcecast> values;
          bool dimension = false;
        };
        std::vector<std::string_view> names;
        for (const py::handle name : state_names) names.push_back(utf8_of(name.ptr()));
        if (null_state < 0 || static_cast<std::size_t>(null_state) >= names.size())
          throw Error("page_rows_json: the NULL state is out of range");
        const std::string_view null_cell = utf8_of(null_prefix.ptr());
        const auto n = static_cast<std::size_t>(index.size());
        const std::int64_t* rows = index.data();
        std::vector<Column> cols;
        for (const py::handle item : columns) {
          Column c;
          std::size_t size = 0;
          if (py::isinstance<py::tuple>(item)) {
            const auto t = py::reinterpret_borrow<py::tuple>(item);
            if (t.size() != 3) throw Error("page_rows_json: a dimension is (codes, states, prefixes)");
            c.dimension = true;
            c.codes = t[0].cast<decltype(c.codes)>();
            c.states = t[1].cast<decltype(c.states)>();
            c.prefixes = t[2].cast<py::list>();
            if (c.states.size() < static_cast<py::ssize_t>(c.prefixes.size()))
              throw Error("page_rows_json: a state per symbol");
            size = static_cast<std::size_t>(c.codes.size());
          } else {
            c.values = item.cast<decltype(c.values)>();
            size = static_cast<std::size_t>(c.values.size());
          }
          for (std::size_t i = 0; i < n; ++i)
            if (rows[i] < 0 || static_cast<std::size_t>(rows[i]) >= size) throw Error("page_rows_json: a row out of range");
          cols.push_back(std::move(c));
        }
        py::list out(n);
        std::string text;
        for (std::size_t i = 0; i < n; ++i) {
          text.assign(1, '[');
          for (std::size_t k = 0; k < cols.size(); ++k) {
            const Column& c = cols[k];
            if (k > 0) text += ',';
            if (!c.dimension) {
              append_measure_cell(text, c.values.data()[rows[i]]);
              continue;
            }
            const std::int64_t code = c.codes.data()[rows[i]];
            if (code < 0) {
              append_value_cell(text, null_cell, names[static_cast<std::size_t>(null_state)]);
              continue;
            }
            if (static_cast<std::size_t>(code) >= c.prefixes.size()) throw Error("page_rows_json: a code out of range");
            const std::int8_t state = c.states.data()[code];
            if (state < 0 || static_cast<std::size_t>(state) >= names.size())
              throw Error("page_rows_json: a state out of range");
            append_value_cell(text, utf8_of(PyList_GET_ITEM(c.prefixes.ptr(), code)),
                              names[static_cast<std::size_t>(state)]);
          }
          text += ']';
          PyObject* row = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), nullptr);
          if (row == nullptr) throw py::error_already_set();
          PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), row);
        }
        return out;
      },
      py::arg("index"), py::arg("columns"), py::arg("null_prefix"), py::arg("state_names"), py::arg("null_state"),
      "The JSON text of each row `index` names (a data page's qMatrix rows): per column, a\n"
      "dimension's cell (codes, states, prefixes: as cells_json writes it, `null_state` for NULL)\n"
      "or a measure's (its values: as measure_cells_json writes it).");
  m.def(
      "text_order",
      [](const py::list& texts, const py::object& tie_texts) {
        std::optional<py::list> ties;
        if (!tie_texts.is_none()) ties = py::cast<py::list>(tie_texts);
        // The texts' UTF-8 bytes (kept by the lists' strings, which `held` keeps alive while
        // the sort runs without the GIL); their bytes' order is their code points'.
        const auto n = static_cast<std::size_t>(texts.size());
        if (n > std::numeric_limits<std::uint32_t>::max()) throw Error("text_order: too many texts");
        if (ties && static_cast<std::size_t>(ties->size()) != n) throw Error("text_order: ties of another length");
        std::vector<py::object> held;
        std::vector<std::string_view> views, tie_views;
        const auto take = [&](const py::list& from, std::vector<std::string_view>& into) {
          into.reserve(n);
          for (const py::handle item : from) {
            if (!PyUnicode_Check(item.ptr())) throw Error("text_order: texts only");
            held.push_back(py::reinterpret_borrow<py::object>(item));
            into.push_back(utf8_of(item.ptr()));
          }
        };
        held.reserve(ties ? 2 * n : n);
        take(texts, views);
        if (ties) take(*ties, tie_views);
        std::vector<std::uint32_t> order(n);
        {
          py::gil_scoped_release release;
          for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
          detail::sort_texts([&](std::uint32_t i) { return views[i]; }, order);
          // Runs of equal texts: by their ties' texts (then position).
          for (std::size_t b = 0; ties && b < n;) {
            std::size_t e = b + 1;
            while (e < n && views[order[e]] == views[order[b]]) ++e;
            if (e - b > 1) {
              std::vector<std::uint32_t> run(order.begin() + static_cast<std::ptrdiff_t>(b),
                                             order.begin() + static_cast<std::ptrdiff_t>(e));
              detail::sort_texts([&](std::uint32_t i) { return tie_views[i]; }, run);
              std::copy(run.begin(), run.end(), order.begin() + static_cast<std::ptrdiff_t>(b));
            }
            b = e;
          }
        }
        py::array_t<std::int64_t> out(static_cast<py::ssize_t>(n));
        std::copy(order.begin(), order.end(), out.mutable_data());
        return out;
      },
      py::arg("texts"), py::arg("ties") = py::none(),
      "The positions of `texts` in their order (code point by code point, a shorter text before\n"
      "the longer ones it begins); equal texts by the texts of `ties` at their positions, then\n"
      "by position.");
  m.def(
      "distinct_codes",
      [](const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& codes, std::size_t size) {
        const auto n = static_cast<std::size_t>(codes.size());
        const std::int64_t* c = codes.data();
        std::size_t distinct = 0;
        bool negative = false;
        {
          py::gil_scoped_release release;
          std::vector<std::uint64_t> seen((size + 63) / 64, 0);
          for (std::size_t i = 0; i < n; ++i) {
            const std::int64_t code = c[i];
            if (code < 0) {
              negative = true;
              continue;
            }
            const auto word = static_cast<std::size_t>(code) >> 6;
            if (word >= seen.size()) seen.resize(word + 1, 0);  // `size` was only a hint
            seen[word] |= std::uint64_t{1} << (code & 63);
          }
          for (const std::uint64_t w : seen) distinct += static_cast<std::size_t>(__builtin_popcountll(w));
        }
        return distinct + (negative ? 1 : 0);
      },
      py::arg("codes"), py::arg("size"),
      "How many distinct codes `codes` holds, the negative ones (NULL, Others) counting as one;\n"
      "`size`, the number of values they index, sizes the bitmap.");
  m.def(
      "number_facts",
      [](const py::array_t<double, py::array::c_style | py::array::forcecast>& values, std::size_t first) {
        const auto n = static_cast<std::size_t>(values.size());
        const double* v = values.data();
        std::size_t count = 0, longest = 0;
        char text[48];
        double low = std::numeric_limits<double>::quiet_NaN(), high = low;
        for (std::size_t i = 0; i < n; ++i) {
          const double x = v[i];
          if (std::isnan(x)) continue;
          if (count == 0 || x < low) low = x;
          if (count == 0 || x > high) high = x;
          if (count < first) longest = std::max(longest, write_value_text(x, text));
          ++count;
        }
        return py::make_tuple(count, low, high, longest);
      },
      py::arg("values"), py::arg("first"),
      "Of the values that are not NaN: how many, the least and the greatest (NaN when none), and\n"
      "the longest text (as lists show numbers) among the first `first` of them.");
  m.def(
      "measure_cells_json",
      [](const py::array_t<double, py::array::c_style | py::array::forcecast>& values) {
        const auto n = static_cast<std::size_t>(values.size());
        const double* v = values.data();
        py::list out(n);
        std::string cell;
        for (std::size_t i = 0; i < n; ++i) {
          cell.clear();
          append_measure_cell(cell, v[i]);
          out[i] = py::str(cell);
        }
        return out;
      },
      py::arg("values"),
      "Each value's measure cell (NxCell in state L) as compact JSON, as a QIX data page holds it.");

  py::class_<Dual>(m, "Dual",
                   "A value with both a number and a text (such as a formatted date); it equals, and\n"
                   "hashes as, its number, as the engine matches values by their numeric part.")
      .def(py::init(&make_dual), py::arg("number"), py::arg("text"))
      .def_property_readonly("number", &number_object, "The numeric part: an int when it is an integer.")
      .def_readonly("text", &Dual::text, "The text part.")
      .def(
          "__eq__",
          [](const Dual& a, const py::object& b) -> py::object {
            if (py::isinstance<Dual>(b)) return py::bool_(a.number == b.cast<const Dual&>().number);
            if (py::isinstance<py::str>(b) || !PyNumber_Check(b.ptr())) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
            return py::bool_(number_object(a).equal(b));
          },
          py::is_operator())
      .def("__hash__", [](const Dual& a) { return py::hash(number_object(a)); })
      .def("__repr__",
           [](const Dual& a) {
             return "Dual(" + std::string(py::repr(number_object(a))) + ", " + std::string(py::repr(py::str(a.text))) + ")";
           })
      .def(py::pickle([](const Dual& a) { return py::make_tuple(number_object(a), a.text); },
                      [](const py::tuple& t) { return make_dual(t[0], t[1].cast<std::string>()); }));
}

}  // namespace assoc::py_bind
