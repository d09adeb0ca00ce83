// CSV import: ModelBuilder.add_csv.
#include <string>

#include "assoc/csv.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {

void bind_csv(py::module_& m) {
  py::object builder = m.attr("ModelBuilder");
  builder.attr("add_csv") = py::cpp_function(
      [](ModelBuilder& b, const py::bytes& data, const std::string& name) {
        char* bytes = nullptr;
        Py_ssize_t size = 0;
        if (PyBytes_AsStringAndSize(data.ptr(), &bytes, &size) != 0) throw py::error_already_set();
        // `data` stays referenced by the caller's frame, so its buffer outlives the call.
        py::gil_scoped_release release;
        LoadedTable table = read_csv(bytes, static_cast<std::size_t>(size), name, &b.cpu());
        b.add(std::move(table));
      },
      py::name("add_csv"), py::is_method(builder), py::arg("data"), py::arg("name"),
      "Adds the table of a CSV file's bytes (UTF-8, header row, `,` `;` or TAB separated).");
}

}  // namespace assoc::py_bind
