// Load scripts: tables held natively between statements, columns built from values + codes.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "assoc/csv.hpp"
#include "assoc/error.hpp"
#include "assoc/qvd.hpp"
#include "assoc/script_column.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

// A table a script has loaded, kept in the engine's form until the model is built.
struct ScriptTable {
  LoadedTable table;
  bool taken = false;

  LoadedTable& get() {
    if (taken) throw Error("table '" + table.name + "' was handed to a model already");
    return table;
  }
  LoadedColumn& column(std::size_t i) {
    LoadedTable& t = get();
    if (i >= t.columns.size()) throw Error("table '" + t.name + "' has no column " + std::to_string(i));
    return t.columns[i];
  }
};

// One column's values as Python hands them over: numbers (NaN: none) and texts (None: none).
LoadedColumn column_from_python(std::string name, const py::array_t<double, py::array::c_style | py::array::forcecast>& numbers,
                                const py::object& texts,
                                const py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>& codes,
                                CpuAccount* cpu) {
  if (numbers.ndim() != 1 || codes.ndim() != 1) throw Error("column '" + name + "': arrays must be one-dimensional");
  const auto n_values = static_cast<std::size_t>(numbers.shape(0));
  std::vector<std::string> text_store;
  std::vector<std::uint8_t> has_text(n_values, 0);
  if (!texts.is_none()) {
    const py::sequence seq = texts.cast<py::sequence>();
    if (static_cast<std::size_t>(py::len(seq)) != n_values)
      throw Error("column '" + name + "': texts and numbers differ in length");
    text_store.resize(n_values);
    for (std::size_t i = 0; i < n_values; ++i) {
      const py::handle t = seq[i];
      if (t.is_none()) continue;
      text_store[i] = t.cast<std::string>();
      has_text[i] = 1;
    }
  }
  const double* nums = numbers.data();
  std::vector<DualView> values(n_values);
  for (std::size_t i = 0; i < n_values; ++i) {
    const double d = nums[i];
    if (std::isinf(d)) throw Error("column '" + name + "': infinite numbers are not values");
    if (has_text[i]) {
      values[i] = std::isnan(d) ? DualView::of_text(text_store[i]) : DualView::of_dual(d, text_store[i]);
    } else if (!std::isnan(d)) {
      values[i] = DualView::of_number(d);
    } else {
      // A value with neither part is NULL: an empty text stands in (rows should not use it).
      values[i] = DualView::of_text({});
    }
  }
  const std::int32_t* rows = codes.data();
  const auto n = static_cast<std::size_t>(codes.shape(0));
  py::gil_scoped_release release;
  return column_from_values(std::move(name), values, rows, n, cpu);
}

}  // namespace

void bind_script(py::module_& m) {
  py::class_<ScriptTable>(m, "ScriptTable", "A table a load script holds between statements.")
      .def_static(
          "read_csv",
          [](const py::buffer& data, const std::string& name) {
            const py::buffer_info info = data.request();
            const char* bytes = contiguous_bytes(info, "read_csv");
            const auto size = static_cast<std::size_t>(info.size);
            ScriptTable out;
            py::gil_scoped_release release;
            out.table = read_csv(bytes, size, name, nullptr);
            return out;
          },
          py::arg("data"), py::arg("name"), "The table of a CSV file's bytes (the reader ModelBuilder.add_csv uses).")
      .def_static(
          "read_qvd",
          [](const py::buffer& data, const std::string& name) {
            const py::buffer_info info = data.request();
            const char* bytes = contiguous_bytes(info, "read_qvd");
            const auto size = static_cast<std::size_t>(info.size);
            ScriptTable out;
            py::gil_scoped_release release;
            out.table = read_qvd(reinterpret_cast<const std::uint8_t*>(bytes), size, nullptr);
            out.table.name = name;
            return out;
          },
          py::arg("data"), py::arg("name"), "The table of a QVD file's bytes, named `name`.")
      .def_static(
          "from_columns",
          [](const std::string& name, std::size_t rows, const py::list& columns) {
            ScriptTable out;
            out.table.name = name;
            out.table.rows = rows;
            for (const py::handle c : columns) {
              const auto t = c.cast<py::tuple>();
              if (t.size() != 4) throw Error("from_columns takes (name, numbers, texts, codes) per column");
              auto codes = t[3].cast<py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>>();
              if (static_cast<std::size_t>(codes.size()) != rows)
                throw Error("table '" + name + "': a column has " + std::to_string(codes.size()) + " rows, not " +
                            std::to_string(rows));
              out.table.columns.push_back(column_from_python(
                  t[0].cast<std::string>(), t[1].cast<py::array_t<double, py::array::c_style | py::array::forcecast>>(),
                  py::reinterpret_borrow<py::object>(t[2]), codes, nullptr));
            }
            return out;
          },
          py::arg("name"), py::arg("rows"), py::arg("columns"),
          "A table from (field, numbers, texts, codes) per column: row r of a column holds value codes[r]\n"
          "(numbers[i] NaN: no number; texts None or texts[i] None: no text; a negative code: NULL).")
      .def_property(
          "name", [](ScriptTable& s) { return s.get().name; },
          [](ScriptTable& s, const std::string& name) { s.get().name = name; })
      .def_property_readonly("rows", [](ScriptTable& s) { return s.get().rows; })
      .def_property_readonly("fields",
                             [](ScriptTable& s) {
                               std::vector<std::string> out;
                               for (const auto& c : s.get().columns) out.push_back(c.name);
                               return out;
                             })
      .def(
          "symbols",
          [](ScriptTable& s, std::size_t i) {
            const SymbolTable& sym = s.column(i).symbols;
            py::array_t<double> numbers(static_cast<py::ssize_t>(sym.size()));
            double* dst = numbers.mutable_data();
            for (std::uint32_t k = 0; k < sym.size(); ++k) dst[k] = sym.number(k);
            py::object texts = py::none();
            if (sym.any_text()) {
              py::list out(sym.size());
              for (std::uint32_t k = 0; k < sym.size(); ++k) {
                if (sym.has_text(k)) {
                  const std::string_view t = sym.text(k);
                  out[k] = py::str(t.data(), t.size());
                } else {
                  out[k] = py::none();
                }
              }
              texts = std::move(out);
            }
            return py::make_tuple(numbers, texts);
          },
          py::arg("column"), "A column's symbols: (numbers with NaN for none, texts with None for none, or None).")
      .def(
          "codes",
          [](ScriptTable& s, std::size_t i) {
            const LoadedColumn& c = s.column(i);
            py::array_t<std::int32_t> out(static_cast<py::ssize_t>(c.index.size()));
            std::int32_t* dst = out.mutable_data();
            py::gil_scoped_release release;
            column_codes(c, dst, nullptr);
            return out;
          },
          py::arg("column"), "A column's symbol index per row, -1 for NULL.")
      .def(
          "select",
          [](ScriptTable& s, const std::vector<std::pair<std::size_t, std::string>>& picks) {
            LoadedTable& t = s.get();
            ScriptTable out;
            out.table.name = t.name;
            out.table.rows = t.rows;
            out.table.comment = t.comment;
            for (const auto& [i, name] : picks) {
              LoadedColumn c = s.column(i);
              c.name = name;
              out.table.columns.push_back(std::move(c));
            }
            return out;
          },
          py::arg("columns"), "A table of some columns (by position, each with a new name), sharing no state.")
      .def(
          "add_to",
          [](ScriptTable& s, ModelBuilder& b) {
            LoadedTable t = std::move(s.get());
            s.taken = true;
            py::gil_scoped_release release;
            b.add(std::move(t));
          },
          py::arg("builder"), "Moves the table into a model builder (the table is empty afterwards).");
}

}  // namespace assoc::py_bind
