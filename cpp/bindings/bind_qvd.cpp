// QVD files: ModelBuilder.add_qvd reads one, DataModel.write_qvd writes one table as one.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "assoc/error.hpp"
#include "assoc/qvd.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {

void bind_qvd(py::module_& m) {
  auto builder = py::reinterpret_borrow<py::class_<ModelBuilder>>(m.attr("ModelBuilder"));
  builder.def(
      "add_qvd",
      [](ModelBuilder& b, const py::buffer& data, const std::optional<std::string>& name) {
        // Any contiguous bytes-like object: bytes, or a memory-mapped file read in place.
        const py::buffer_info info = data.request();
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(contiguous_bytes(info, "add_qvd"));
        const auto size = static_cast<std::size_t>(info.size);
        // `info` holds the buffer for the whole call (an mmap cannot close meanwhile).
        py::gil_scoped_release release;
        LoadedTable table = read_qvd(bytes, size, &b.cpu());
        if (name) table.name = *name;
        b.add(std::move(table));
      },
      py::arg("data"), py::arg("name") = py::none(),
      "Adds the table of a QVD file (bytes, or any contiguous buffer such as an mmap); `name` "
      "replaces the header's TableName.");

  auto model = py::reinterpret_borrow<py::class_<PyModel>>(m.attr("DataModel"));
  model.def(
      "write_qvd",
      [](const PyModel& p, const std::string& table) {
        std::vector<std::uint8_t> out;
        {
          py::gil_scoped_release release;
          out = write_qvd(*p.model, p.model->table(table));
        }
        return py::bytes(reinterpret_cast<const char*>(out.data()), static_cast<py::ssize_t>(out.size()));
      },
      py::arg("table"), "One table as the bytes of a QVD file.");
}

}  // namespace assoc::py_bind
