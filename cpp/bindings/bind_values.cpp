// Values between Python and the engine: assoc.Dual, Python values read into cells, and
// symbols converted back to int, float, str or Dual.
#include <cmath>
#include <string>

#include "assoc/error.hpp"
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

void bind_values(py::module_& m) {
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
