#pragma once
// One bind_<area> function per binding area; module.cpp only wires them.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "assoc/data_model.hpp"
#include "assoc/error.hpp"
#include "assoc/hypercube.hpp"

namespace assoc::py_bind {

namespace py = pybind11;

// The Python-side handle of a finished model (immutable, shared by sessions).
struct PyModel {
  std::shared_ptr<const DataModel> model;
};

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

// A value with both a number and a text, as Python sees it; `integral`: its number reads as an int.
struct Dual {
  double number;
  std::string text;
  bool integral;
};

// Python values read while the GIL is held (None, int, float, str, Dual), used without it.
struct Cells {
  enum Kind : std::uint8_t { kNumber, kText, kDual };  // kNumber: NaN for None
  std::vector<double> numbers;
  std::vector<std::string> texts;  // of the kText and kDual cells, in order
  std::vector<std::uint8_t> kinds;

  // Reads one value; throws Error (its message starting with `where`) for any other type.
  void add(const py::handle& v, const std::string& where);
  // The cells as engine values (pointing into `texts`).
  std::vector<DualView> views() const;
  // Adds the cells to a column (whose rules reject infinities and Duals without a finite number).
  void add_to(ColumnBuilder& column) const;
};

// Converts one symbol to int, float, str or Dual.
py::object symbol_to_python(const SymbolTable& symbols, std::uint32_t i);
// Every symbol's text as lists show it (a dual's or a text's own; a number's: a whole number
// below 2^53 as an integer, any other as %.15g) and its number (NaN for a text), as
// (list[str], float64 array): what field_order.FieldOrder reads, without a Python object per
// value made first.
py::tuple symbol_texts(const SymbolTable& symbols);

// The bytes of a contiguous one-dimensional buffer (bytes, bytearray, memoryview, mmap).
// `info` must outlive the use of the returned pointer; throws Error naming `what` otherwise.
const char* contiguous_bytes(const py::buffer_info& info, const char* what);

// assoc.Dual; first, as the other areas convert values to it.
void bind_values(py::module_& m);
void bind_functions(py::module_& m);
void bind_model(py::module_& m);
void bind_session(py::module_& m);
// Adds ModelBuilder.add_csv; needs bind_model first.
void bind_csv(py::module_& m);
// Adds QVD reading and writing to the classes bind_model made (call it after bind_model).
void bind_qvd(py::module_& m);
// Adds Hypercube and Session.hypercube (call it after bind_session).
void bind_hypercube(py::module_& m);
// Adds ScriptTable, the tables a load script holds (call it after bind_model).
void bind_script(py::module_& m);
// Adds Arrow import (ScriptTable.read_arrow) and export (ArrowExport, DataModel.arrow,
// Session.arrow_table); call it after bind_script and bind_session.
void bind_arrow(py::module_& m);
// Adds JsonDelta, the walk of delta answers over Python values.
void bind_delta(py::module_& m);
// An ArrowExport of a computed hypercube ("number", "text" or "struct" duals).
py::object hypercube_arrow(std::shared_ptr<const AssociativeModel> model, std::shared_ptr<const Hypercube> cube,
                           const std::string& duals, const std::shared_ptr<const RowMask>& mask = nullptr);

}  // namespace assoc::py_bind
