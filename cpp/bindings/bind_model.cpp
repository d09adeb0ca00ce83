// Models: building from columns, reading columns and symbols back, metadata, threads.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <string>
#include <vector>

#include "assoc/big_blocks.hpp"
#include "assoc/counters.hpp"
#include "assoc/error.hpp"
#include "assoc/metadata.hpp"
#include "assoc/number_text.hpp"
#include "assoc/thread_name.hpp"
#include "assoc/thread_pool.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

bool is_numpy_numeric(const py::handle& obj) {
  if (!py::isinstance<py::array>(obj)) return false;
  const char kind = py::reinterpret_borrow<py::array>(obj).dtype().kind();
  return kind == 'i' || kind == 'u' || kind == 'f' || kind == 'b';
}

py::dict metadata_dict(const DataModel& model) {
  const ModelMetadata md = describe(model);
  py::dict out;
  py::dict reload_meta;
  reload_meta["cpu_time_spent_ms"] = md.cpu_time_spent_ms;
  py::dict hardware;
  hardware["logical_cores"] = md.logical_cores;
  hardware["total_memory"] = md.total_memory;
  reload_meta["hardware"] = hardware;
  out["reload_meta"] = reload_meta;
  out["static_byte_size"] = md.static_byte_size;
  py::list fields;
  for (const auto& f : md.fields) {
    py::dict d;
    d["name"] = f.name;
    d["src_tables"] = f.src_tables;
    d["is_system"] = f.is_system;
    d["is_hidden"] = f.is_hidden;
    d["is_semantic"] = f.is_semantic;
    d["distinct_only"] = f.distinct_only;
    d["cardinal"] = f.cardinal;
    d["total_count"] = f.total_count;
    d["is_locked"] = f.is_locked;
    d["always_one_selected"] = f.always_one_selected;
    d["is_numeric"] = f.is_numeric;
    d["comment"] = f.comment;
    d["tags"] = f.tags;
    d["byte_size"] = f.byte_size;
    fields.append(d);
  }
  out["fields"] = fields;
  py::list tables;
  for (const auto& t : md.tables) {
    py::dict d;
    d["name"] = t.name;
    d["is_system"] = t.is_system;
    d["is_semantic"] = t.is_semantic;
    d["is_loose"] = t.is_loose;
    d["no_of_rows"] = t.no_of_rows;
    d["no_of_fields"] = t.no_of_fields;
    d["no_of_key_fields"] = t.no_of_key_fields;
    d["comment"] = t.comment;
    d["byte_size"] = t.byte_size;
    tables.append(d);
  }
  out["tables"] = tables;
  return out;
}

}  // namespace

const char* contiguous_bytes(const py::buffer_info& info, const char* what) {
  if (info.ndim != 1 || info.itemsize != 1 || (info.strides.size() == 1 && info.strides[0] != 1))
    throw Error(std::string(what) + " needs contiguous bytes");
  return static_cast<const char*>(info.ptr);
}

void bind_model(py::module_& m) {
  m.def("set_threads", &set_threads, py::arg("n"), "Threads heavy work may use (0 = all logical cores).");
  m.def("threads", &threads, "Threads heavy work uses now.");
  m.def("logical_cores", &logical_cores, "Logical cores of this machine.");
  m.def("total_memory", &total_memory, "Physical memory of this machine, in bytes.");
  m.def("name_this_thread", &name_this_thread, py::arg("name"),
        "Names the calling thread for the system (Linux: 15 bytes at most), as top -H shows it.");

  m.def(
      "memory_blocks",
      [] {
        const big_blocks::Stats s = big_blocks::stats();
        return py::dict(py::arg("mapped") = s.mapped, py::arg("reused") = s.reused,
                        py::arg("unmapped") = s.unmapped, py::arg("kept_bytes") = s.kept_bytes,
                        py::arg("kept_limit") = s.kept_limit);
      },
      "The engine's big arrays (1 MiB and up): blocks mapped from the system, requests served\n"
      "from freed blocks kept for reuse, blocks given back, and the bytes kept now and at most.");
  m.def("set_memory_blocks_kept", &big_blocks::set_kept_limit, py::arg("bytes"),
        "Sets the most bytes of freed big blocks kept for reuse (0: none); gives back any over it.");

  m.def(
      "engine_counters",
      [] {
        const CounterSnapshot s = Counters::instance().snapshot();
        py::dict d;
        d["selections"] = s.selections;
        d["cache"] = py::dict(py::arg("hits") = s.cache_hits, py::arg("lookups") = s.cache_lookups,
                              py::arg("added") = s.cache_added, py::arg("replaced") = s.cache_replaced,
                              py::arg("bytes_added") = s.cache_bytes_added);
        d["session"] = py::dict(py::arg("active") = s.sessions_active, py::arg("total") = s.sessions_total);
        d["users"] = py::dict(py::arg("active") = s.users_active, py::arg("total") = s.users_total);
        return d;
      },
      "The engine's own counters: selections, cache, sessions and users.");

  py::class_<ModelBuilder>(m, "ModelBuilder", "Collects tables and builds a model.")
      .def(py::init<>())
      .def(
          "set_interpretation",
          [](ModelBuilder& b, const py::dict& variables) {
            std::vector<std::pair<std::string, std::string>> vars;
            for (auto item : variables) {
              if (!py::isinstance<py::str>(item.first) || !py::isinstance<py::str>(item.second))
                throw Error("interpretation variables must be names and texts");
              vars.emplace_back(item.first.cast<std::string>(), item.second.cast<std::string>());
            }
            b.set_interpretation(std::move(vars));
          },
          py::arg("variables"),
          "The number interpretation variables (DateFormat, FirstWeekDay, …) the model keeps for its charts.")
      .def(
          "add_columns",
          [](ModelBuilder& b, const std::string& name, const py::dict& columns) {
            LoadedTable t;
            t.name = name;
            for (auto item : columns) {
              if (!py::isinstance<py::str>(item.first)) throw Error("table '" + name + "': field names must be strings");
              std::string field = item.first.cast<std::string>();
              py::handle values = item.second;
              ColumnBuilder column(field);
              LoadedColumn col;
              if (is_numpy_numeric(values)) {
                auto arr = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(values);
                if (!arr || arr.ndim() != 1) throw Error("field '" + field + "': a column must be one-dimensional");
                const double* data = arr.data();
                const auto n = static_cast<std::size_t>(arr.shape(0));
                py::gil_scoped_release release;
                CpuScope scope(&b.cpu());
                column.add_numbers(data, n);
                col = column.finish();
              } else {
                if (py::isinstance<py::str>(values) || py::isinstance<py::bytes>(values) || !py::hasattr(values, "__iter__"))
                  throw Error("field '" + field + "': a column must be a sequence of values");
                Cells cells;
                if (py::hasattr(values, "__len__")) cells.kinds.reserve(py::len(values));
                const std::string where = "field '" + field + "': ";
                for (auto v : values) cells.add(v, where);
                py::gil_scoped_release release;
                CpuScope scope(&b.cpu());
                cells.add_to(column);
                col = column.finish();
              }
              if (t.columns.empty()) t.rows = col.index.size();
              t.columns.push_back(std::move(col));
            }
            py::gil_scoped_release release;
            b.add(std::move(t));
          },
          py::arg("name"), py::arg("columns"), "Adds a table from a dict of field name to values.")
      .def_property_readonly("table_count", &ModelBuilder::table_count)
      .def(
          "build",
          [](ModelBuilder& b) {
            py::gil_scoped_release release;
            return PyModel{b.build()};
          },
          "Finishes the model.");

  py::class_<PyModel>(m, "DataModel", "An app's loaded data: fields and tables.")
      .def_property_readonly(
          "interpretation_variables",
          [](const PyModel& p) {
            py::dict out;
            for (const auto& [name, text] : p.model->interpretation_variables()) out[py::str(name)] = text;
            return out;
          },
          "The number interpretation variables the model keeps (those its script set).")
      .def(
          "metadata",
          [](const PyModel& p) { return metadata_dict(*p.model); },
          "DataModelMetadata as a dict.")
      .def("table_names", [](const PyModel& p) { return p.model->data_table_names(); },
           "Data table names (synthetic key tables included), in load order.")
      .def("field_names",
           [](const PyModel& p) {
             std::vector<std::string> out;
             for (const auto& f : p.model->fields()) out.push_back(f.name);
             return out;
           })
      .def("table_rows", [](const PyModel& p, const std::string& t) { return p.model->table(t).rows; })
      .def("table_fields", [](const PyModel& p, const std::string& t) { return p.model->field_names(p.model->table(t)); },
           py::arg("table"), "A table's columns in the model (synthetic keys in place of their parts).")
      .def("source_fields",
           [](const PyModel& p, const std::string& t) { return p.model->source_field_names(p.model->table(t)); },
           py::arg("table"), "The fields a table was loaded with, in load order.")
      .def("table_is_synthetic", [](const PyModel& p, const std::string& t) { return p.model->table(t).is_synthetic; },
           py::arg("table"), "True for a synthetic key table ($Syn N Table).")
      .def(
          "column",
          [](const PyModel& p, const std::string& table, const std::string& field) {
            std::vector<std::uint32_t> rows;
            {
              py::gil_scoped_release release;
              rows = p.model->source_codes(table, field);
            }
            const SymbolTable& symbols = p.model->field(field).symbols;
            std::vector<py::object> cache(symbols.size());
            py::list out(rows.size());
            for (std::size_t i = 0; i < rows.size(); ++i) {
              const std::uint32_t s = rows[i];
              if (s == kNull) {
                out[i] = py::none();
              } else {
                if (!cache[s]) cache[s] = symbol_to_python(symbols, s);
                out[i] = cache[s];
              }
            }
            return out;
          },
          py::arg("table"), py::arg("field"),
          "A column's values per row (None for NULL), as loaded (via synthetic keys).")
      .def(
          "column_indices",
          [](const PyModel& p, const std::string& table, const std::string& field) {
            const Table& t = p.model->table(table);
            const int f = p.model->find_field(field);
            py::array_t<std::int64_t> out(static_cast<py::ssize_t>(t.rows));
            std::int64_t* dst = out.mutable_data();
            py::gil_scoped_release release;
            if (const int c = f < 0 ? -1 : t.column_of(static_cast<std::uint32_t>(f)); c >= 0) {
              t.columns[static_cast<std::size_t>(c)].index.decode_signed(0, t.rows, dst);
            } else {
              const std::vector<std::uint32_t> rows = p.model->source_codes(table, field);
              for (std::size_t r = 0; r < rows.size(); ++r) dst[r] = rows[r] == kNull ? -1 : static_cast<std::int64_t>(rows[r]);
            }
            return out;
          },
          py::arg("table"), py::arg("field"),
          "A column's symbol indexes per row (-1 for NULL), as loaded (via synthetic keys).")
      .def(
          "symbols",
          [](const PyModel& p, const std::string& field) {
            const SymbolTable& s = p.model->field(field).symbols;
            py::list out(s.size());
            for (std::uint32_t i = 0; i < s.size(); ++i) out[i] = symbol_to_python(s, i);
            return out;
          },
          py::arg("field"), "A field's distinct values in symbol order.")
      .def(
          "symbol_texts", [](const PyModel& p, const std::string& field) { return symbol_texts(p.model->field(field).symbols); },
          py::arg("field"), "A field's symbols' texts and numbers, as (list[str], float64 array) in symbol order.")
      .def(
          "bit_width",
          [](const PyModel& p, const std::string& table, const std::string& field) {
            return p.model->column(table, field).index.bit_width();
          },
          py::arg("table"), py::arg("field"), "Bits per row of a column's packed index.");
}

}  // namespace assoc::py_bind
