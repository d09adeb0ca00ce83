// Hypercubes: Session.hypercube and the computed cube's rows, totals and columns.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "assoc/error.hpp"
#include "assoc/hypercube.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

// A computed hypercube and the model whose symbols its codes index.
struct PyHypercube {
  std::shared_ptr<const AssociativeModel> model;
  std::shared_ptr<const Hypercube> cube;
  std::shared_ptr<const RowMask> mask;  // the session's section access (Arrow exports)

  const SymbolTable& symbols(std::uint32_t field) const { return model->data().fields()[field].symbols; }
  std::size_t n_dims() const { return cube->spec().dimensions.size(); }
  std::size_t n_measures() const { return cube->spec().measures.size(); }
  std::size_t column(std::size_t c) const {
    if (c >= n_dims() + n_measures()) throw Error("no column " + std::to_string(c));
    return c;
  }
};

py::object measure_value(double v) { return std::isnan(v) ? py::none() : py::object(py::float_(v)); }

// A computed value: None, a float, a str, or a Dual when it has both.
py::object value_object(double number, const std::string* text) {
  if (text == nullptr) return measure_value(number);
  if (std::isnan(number)) return py::str(*text);
  return py::cast(Dual{number, *text, false});
}

// Rows [top, top+height) as tuples: dimension values as App.symbols gives them, then measures.
py::list rows_of(const PyHypercube& h, std::size_t top, std::size_t height) {
  const Hypercube& cube = *h.cube;
  const std::size_t end = top >= cube.size() ? top : top + std::min(height, cube.size() - top);
  const std::size_t nd = h.n_dims(), nm = h.n_measures();
  std::vector<std::unordered_map<std::uint32_t, py::object>> seen(nd + nm);
  auto value = [&](std::size_t column, std::uint32_t field, std::uint32_t code) -> py::object {
    if (code == kNull) return py::none();
    auto [it, added] = seen[column].try_emplace(code);
    if (added) it->second = symbol_to_python(h.symbols(field), code);
    return it->second;
  };
  py::list out;
  for (std::size_t r = top; r < end; ++r) {
    py::tuple row(nd + nm);
    for (std::size_t d = 0; d < nd; ++d) row[d] = value(d, cube.dimension_field(d), cube.codes(d)[r]);
    for (std::size_t m = 0; m < nm; ++m) {
      row[nd + m] = cube.only_field(m) != kNull ? value(nd + m, cube.only_field(m), cube.only_symbols(m)[r])
                                               : value_object(cube.values(m)[r], cube.text(m, r));
    }
    out.append(std::move(row));
  }
  return out;
}

}  // namespace

void bind_hypercube(py::module_& m) {
  py::class_<PyHypercube>(m, "Hypercube", "A computed hypercube: dimension tuples and measure values.")
      .def("__len__", [](const PyHypercube& h) { return h.cube->size(); })
      .def_property_readonly("dimensions", [](const PyHypercube& h) { return h.cube->spec().dimensions; })
      .def_property_readonly("measures", [](const PyHypercube& h) { return h.cube->spec().measures; })
      .def(
          "rows", [](const PyHypercube& h, std::size_t top, std::size_t height) { return rows_of(h, top, height); },
          py::arg("top"), py::arg("height"), "Rows [top, top+height) as tuples.")
      .def(
          "totals",
          [](const PyHypercube& h) {
            py::list out;
            const Hypercube& cube = *h.cube;
            for (std::size_t m = 0; m < h.n_measures(); ++m) {
              if (cube.only_field(m) == kNull) {
                const Value& v = cube.total_value(m);
                out.append(value_object(v.num, v.has_text ? &v.text : nullptr));
              } else if (cube.total_symbol(m) == kNull) {
                out.append(py::none());
              } else {
                out.append(symbol_to_python(h.symbols(cube.only_field(m)), cube.total_symbol(m)));
              }
            }
            return out;
          },
          "Each measure over every possible record (None for NULL).")
      .def(
          "array",
          [](const PyHypercube& h, std::size_t column) {
            const Hypercube& cube = *h.cube;
            const std::size_t c = h.column(column);
            py::array_t<double> out(static_cast<py::ssize_t>(cube.size()));
            double* dst = out.mutable_data();
            if (c >= h.n_dims()) {
              const std::vector<double>& v = cube.values(c - h.n_dims());
              std::copy(v.begin(), v.end(), dst);
              return out;
            }
            const SymbolTable& symbols = h.symbols(cube.dimension_field(c));
            const std::vector<std::uint32_t>& codes = cube.codes(c);
            for (std::size_t r = 0; r < codes.size(); ++r)
              dst[r] = codes[r] == kNull ? std::nan("") : symbols.number(codes[r]);
            return out;
          },
          py::arg("column"), "A column as float64: measures (NaN for NULL), or a dimension's numbers.")
      .def(
          "codes",
          [](const PyHypercube& h, std::size_t dim) {
            if (dim >= h.n_dims()) throw Error("no dimension " + std::to_string(dim));
            const std::vector<std::uint32_t>& codes = h.cube->codes(dim);
            py::array_t<std::int64_t> out(static_cast<py::ssize_t>(codes.size()));
            std::int64_t* dst = out.mutable_data();
            for (std::size_t r = 0; r < codes.size(); ++r)
              dst[r] = codes[r] == kNull ? -1 : static_cast<std::int64_t>(codes[r]);
            return out;
          },
          py::arg("dimension"), "Each row's symbol index of a dimension (-1 for None).")
      .def(
          "dimension_symbols",
          [](const PyHypercube& h, std::size_t dim) {
            if (dim >= h.n_dims()) throw Error("no dimension " + std::to_string(dim));
            const SymbolTable& s = h.model->data().fields()[h.cube->dimension_field(dim)].symbols;
            py::list out(s.size());
            for (std::uint32_t i = 0; i < s.size(); ++i) out[i] = symbol_to_python(s, i);
            return out;
          },
          py::arg("dimension"), "The values codes() indexes: the field's symbols, or a calculated dimension's.")
      .def(
          "dimension_symbol_texts",
          [](const PyHypercube& h, std::size_t dim) {
            if (dim >= h.n_dims()) throw Error("no dimension " + std::to_string(dim));
            return symbol_texts(h.model->data().fields()[h.cube->dimension_field(dim)].symbols);
          },
          py::arg("dimension"), "dimension_symbols' texts and numbers, as (list[str], float64 array).")
      .def(
          "dimension_symbols_key",
          [](const PyHypercube& h, std::size_t dim) {
            if (dim >= h.n_dims()) throw Error("no dimension " + std::to_string(dim));
            return py::make_tuple(h.model->serial(), h.cube->dimension_field(dim));
          },
          py::arg("dimension"),
          "(serial of the model, field) naming dimension_symbols' values: equal keys, equal values.")
      .def(
          "calculated_source",
          [](const PyHypercube& h, std::size_t dim) -> py::object {
            if (dim >= h.n_dims()) throw Error("no dimension " + std::to_string(dim));
            const std::string& field = h.cube->calculated_source(dim);
            if (field.empty()) return py::none();
            const std::vector<std::uint32_t>& map = h.cube->calculated_source_map(dim);
            py::array_t<std::int64_t> out(static_cast<py::ssize_t>(map.size()));
            std::int64_t* dst = out.mutable_data();
            for (std::size_t i = 0; i < map.size(); ++i) dst[i] = map[i] == kNull ? -1 : static_cast<std::int64_t>(map[i]);
            return py::make_tuple(field, out);
          },
          py::arg("dimension"),
          "A calculated dimension's one field and its symbols' result codes (-1: NULL), or None.")
      .def(
          "arrow", [](const PyHypercube& h, const std::string& duals) { return hypercube_arrow(h.model, h.cube, duals, h.mask); },
          py::arg("duals"), "The rows for Arrow consumers (an ArrowExport).");

  py::object session = m.attr("Session");
  session.attr("hypercube") = py::cpp_function(
      [](const Session& s, std::vector<std::string> dimensions, std::vector<std::string> measures,
         std::vector<std::pair<std::string, std::string>> sort, bool suppress_zero, bool suppress_missing,
         const std::string& state_name, std::optional<std::vector<std::uint32_t>> pivot_top) {
        HypercubeSpec spec;
        spec.pivot = pivot_top.has_value();
        if (pivot_top) spec.pivot_top = std::move(*pivot_top);
        spec.dimensions = std::move(dimensions);
        spec.measures = std::move(measures);
        spec.sort = std::move(sort);
        spec.suppress_zero = suppress_zero;
        spec.suppress_missing = suppress_missing;
        PyHypercube out{s.model().shared_from_this(), nullptr, s.mask()};
        py::gil_scoped_release release;
        auto [state, rows] = s.snapshot(state_name);
        const NamedStates states = s.selections();
        out.cube = hypercube(*out.model, state, spec, std::move(rows), &states, state_name);
        if (out.cube->derived_model()) out.model = out.cube->derived_model();  // calculated dimensions' symbols
        return out;
      },
      py::name("hypercube"), py::is_method(session), py::arg("dimensions"), py::arg("measures"), py::arg("sort"),
      py::arg("suppress_zero"), py::arg("suppress_missing"), py::arg("state") = "$", py::arg("pivot_top") = py::none(),
      "The hypercube of dimensions and measures under one state's selections; `pivot_top`: a pivot\n"
      "table's dimensions on top, by position (the inter-record functions read its columns and\n"
      "rows), None for other tables.");
}

}  // namespace assoc::py_bind
