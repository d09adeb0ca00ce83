#pragma once
// One bind_<area> function per binding area; module.cpp only wires them.
#include <pybind11/pybind11.h>

#include <memory>

#include "assoc/data_model.hpp"

namespace assoc::py_bind {

namespace py = pybind11;

// The Python-side handle of a finished model (immutable, shared by sessions).
struct PyModel {
  std::shared_ptr<const DataModel> model;
};

// Converts one symbol to int, float, str or Dual.
py::object symbol_to_python(const SymbolTable& symbols, std::uint32_t i);

// The bytes of a contiguous one-dimensional buffer (bytes, bytearray, memoryview, mmap).
// `info` must outlive the use of the returned pointer; throws Error naming `what` otherwise.
const char* contiguous_bytes(const py::buffer_info& info, const char* what);

void bind_model(py::module_& m);
void bind_session(py::module_& m);
// Adds ModelBuilder.add_csv; needs bind_model first.
void bind_csv(py::module_& m);
// Adds QVD reading and writing to the classes bind_model made (call it after bind_model).
void bind_qvd(py::module_& m);
// Adds Hypercube and Session.hypercube (call it after bind_session).
void bind_hypercube(py::module_& m);

}  // namespace assoc::py_bind
