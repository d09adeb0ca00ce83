// QVD files: ModelBuilder.add_qvd reads one, DataModel.write_qvd writes one table as one.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "assoc/counters.hpp"
#include "assoc/qvd.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {

void bind_qvd(py::module_& m) {
  auto builder = py::reinterpret_borrow<py::class_<ModelBuilder>>(m.attr("ModelBuilder"));
  builder.def(
      "add_qvd",
      [](ModelBuilder& b, const py::bytes& data, const std::optional<std::string>& name) {
        char* bytes = nullptr;
        Py_ssize_t size = 0;
        if (PyBytes_AsStringAndSize(data.ptr(), &bytes, &size) != 0) throw py::error_already_set();
        // `data` stays referenced by the caller while the GIL is released.
        py::gil_scoped_release release;
        LoadedTable table = read_qvd(reinterpret_cast<const std::uint8_t*>(bytes), static_cast<std::size_t>(size), &b.cpu());
        if (name) table.name = *name;
        b.add(std::move(table));
      },
      py::arg("data"), py::arg("name") = py::none(),
      "Adds the table of a QVD file; `name` replaces the header's TableName.");

  auto model = py::reinterpret_borrow<py::class_<PyModel>>(m.attr("DataModel"));
  model.def(
      "write_qvd",
      [](const PyModel& p, const std::string& table) {
        Counters::instance().call();
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
