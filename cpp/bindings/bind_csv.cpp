// CSV import: ModelBuilder.add_csv.
#include <string>

#include "assoc/csv.hpp"
#include "assoc/error.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {

void bind_csv(py::module_& m) {
  py::object builder = m.attr("ModelBuilder");
  builder.attr("add_csv") = py::cpp_function(
      [](ModelBuilder& b, const py::buffer& data, const std::string& name) {
        // Any contiguous bytes-like object: bytes, or a memory-mapped file read in place.
        const py::buffer_info info = data.request();
        if (info.ndim != 1 || info.itemsize != 1 || (info.strides.size() == 1 && info.strides[0] != 1))
          throw Error("add_csv needs contiguous bytes");
        const auto* bytes = static_cast<const char*>(info.ptr);
        const auto size = static_cast<std::size_t>(info.size);
        // `info` holds the buffer for the whole call, so the bytes outlive the parse.
        py::gil_scoped_release release;
        LoadedTable table = read_csv(bytes, size, name, &b.cpu());
        b.add(std::move(table));
      },
      py::name("add_csv"), py::is_method(builder), py::arg("data"), py::arg("name"),
      "Adds the table of a CSV file's bytes (UTF-8, header row, `,` `;` or TAB separated).");
}

}  // namespace assoc::py_bind
