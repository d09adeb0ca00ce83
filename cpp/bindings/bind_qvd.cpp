// QVD files: ModelBuilder.add_qvd reads one, DataModel.write_qvd writes one table as one.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "assoc/counters.hpp"
#include "assoc/qvd.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

// A contiguous byte buffer held for the duration of a call: while the buffer is exported its
// owner cannot free or resize it (an mmap refuses to close), so it may be read without the GIL.
class ContiguousBytes {
 public:
  explicit ContiguousBytes(const py::object& obj) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_SIMPLE) != 0) throw py::error_already_set();
  }
  ~ContiguousBytes() { PyBuffer_Release(&view_); }
  ContiguousBytes(const ContiguousBytes&) = delete;
  ContiguousBytes& operator=(const ContiguousBytes&) = delete;

  const std::uint8_t* data() const { return static_cast<const std::uint8_t*>(view_.buf); }
  std::size_t size() const { return static_cast<std::size_t>(view_.len); }

 private:
  Py_buffer view_{};
};

}  // namespace

void bind_qvd(py::module_& m) {
  auto builder = py::reinterpret_borrow<py::class_<ModelBuilder>>(m.attr("ModelBuilder"));
  builder.def(
      "add_qvd",
      [](ModelBuilder& b, const py::object& data, const std::optional<std::string>& name) {
        const ContiguousBytes bytes(data);
        py::gil_scoped_release release;
        LoadedTable table = read_qvd(bytes.data(), bytes.size(), &b.cpu());
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
