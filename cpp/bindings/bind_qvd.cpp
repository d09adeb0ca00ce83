// QVD files: ModelBuilder.add_qvd reads one, QvdStream reads one as it arrives (its table
// added by ModelBuilder.add_qvd_table), DataModel.write_qvd writes one table as one.
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "assoc/error.hpp"
#include "assoc/qvd.hpp"
#include "assoc/qvd_stream.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

// Chunks from this size on are copied with the GIL released.
constexpr std::size_t kReleaseGilBytes = std::size_t{1} << 20;

// A table a QvdStream finished, until a builder takes it (once).
struct QvdTable {
  std::optional<LoadedTable> table;
  std::int64_t cpu_ns = 0;
};

}  // namespace

void bind_qvd(py::module_& m) {
  py::class_<QvdTable>(m, "QvdTable", "A table read by a QvdStream, for ModelBuilder.add_qvd_table.")
      .def_property_readonly(
          "name",
          [](const QvdTable& t) {
            if (!t.table) throw Error("the table was added to a model already");
            return t.table->name;
          },
          "The header's TableName.");

  py::class_<QvdStream>(m, "QvdStream", "A QVD file parsed while its bytes arrive.")
      .def(py::init([](std::size_t size, const std::optional<std::string>& file, bool sync) {
             // Creating the file and reserving its disk space may wait for the disk.
             py::gil_scoped_release release;
             return std::make_unique<QvdStream>(size, file.value_or(std::string()), sync);
           }),
           py::arg("size"), py::arg("file") = py::none(), py::arg("sync") = false,
           "A stream of a file of `size` bytes (its declared length), also written to the new\n"
           "file `file` when given (and flushed to disk by finish() with `sync`).")
      .def(
          "feed",
          [](QvdStream& s, const py::buffer& data) {
            const py::buffer_info info = data.request();
            const auto* bytes = reinterpret_cast<const std::uint8_t*>(contiguous_bytes(info, "feed"));
            const auto n = static_cast<std::size_t>(info.size);
            // Copying a chunk of the usual size takes less than handing the GIL over and back.
            std::optional<py::gil_scoped_release> release;
            if (n >= kReleaseGilBytes) release.emplace();
            s.feed(bytes, n);
          },
          py::arg("data"), "Appends the next bytes (any contiguous buffer).")
      .def(
          "finish",
          [](QvdStream& s) {
            QvdTable t;
            {
              py::gil_scoped_release release;
              t.table = s.finish();
              t.cpu_ns = s.cpu().ns();
            }
            return t;
          },
          "The table of the bytes fed, as add_qvd reads them (the same errors); once only.")
      .def_property_readonly("received", &QvdStream::received, "Bytes fed so far.")
      .def_property_readonly("table_name", &QvdStream::table_name,
                             "The header's TableName once the header is read, else None.");

  auto builder = py::reinterpret_borrow<py::class_<ModelBuilder>>(m.attr("ModelBuilder"));
  builder.def(
      "add_qvd_table",
      [](ModelBuilder& b, QvdTable& t, const std::optional<std::string>& name) {
        if (!t.table) throw Error("the table was added to a model already");
        LoadedTable table = std::move(*t.table);
        t.table.reset();
        if (name) table.name = *name;
        b.cpu().add(t.cpu_ns);
        py::gil_scoped_release release;
        b.add(std::move(table));
      },
      py::arg("table"), py::arg("name") = py::none(),
      "Adds a table a QvdStream read; `name` replaces the header's TableName.");
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
      [](const PyModel& p, const std::string& table, std::map<std::string, std::vector<std::string>> field_tags,
         std::map<std::string, std::string> field_comments, std::optional<std::string> table_comment,
         std::map<std::string, std::vector<std::string>> field_untags) {
        QvdAnnotations annotations{std::move(field_tags), std::move(field_comments), std::move(table_comment),
                                   std::move(field_untags)};
        std::vector<std::uint8_t> out;
        {
          py::gil_scoped_release release;
          out = write_qvd(*p.model, p.model->table(table), annotations);
        }
        return py::bytes(reinterpret_cast<const char*>(out.data()), static_cast<py::ssize_t>(out.size()));
      },
      py::arg("table"), py::arg("field_tags") = std::map<std::string, std::vector<std::string>>{},
      py::arg("field_comments") = std::map<std::string, std::string>{}, py::arg("table_comment") = py::none(),
      py::arg("field_untags") = std::map<std::string, std::vector<std::string>>{},
      "One table as the bytes of a QVD file; a load script's tags (after each field's own, less "
      "those it untagged) and comments (in place of the model's) go into its header.");
}

}  // namespace assoc::py_bind
