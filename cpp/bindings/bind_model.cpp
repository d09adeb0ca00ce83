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
#include "assoc/thread_pool.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

// A value with both a number and a text, as Python sees it.
struct Dual {
  double number;
  std::string text;
};

// One column's values converted from Python while the GIL is held; interned without it.
struct CellBuffer {
  std::vector<double> numbers;      // NaN: no number
  std::vector<std::string> texts;   // used where has_text
  std::vector<std::uint8_t> has_text;
};

bool is_numpy_numeric(const py::handle& obj) {
  if (!py::isinstance<py::array>(obj)) return false;
  const char kind = py::reinterpret_borrow<py::array>(obj).dtype().kind();
  return kind == 'i' || kind == 'u' || kind == 'f' || kind == 'b';
}

void add_python_value(CellBuffer& buf, const py::handle& v, const std::string& field) {
  const double nan = std::nan("");
  if (v.is_none()) {
    buf.numbers.push_back(nan);
    buf.has_text.push_back(0);
  } else if (py::isinstance<py::str>(v)) {
    buf.numbers.push_back(nan);
    buf.texts.push_back(v.cast<std::string>());
    buf.has_text.push_back(1);
  } else if (py::isinstance<Dual>(v)) {
    const Dual& d = v.cast<const Dual&>();
    if (!std::isfinite(d.number)) throw Error("field '" + field + "': a Dual needs a finite number");
    buf.numbers.push_back(d.number);
    buf.texts.push_back(d.text);
    buf.has_text.push_back(1);
  } else if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v) ||
             PyNumber_Check(v.ptr())) {
    double d;
    try {
      d = v.cast<double>();
    } catch (const py::cast_error&) {
      throw Error("field '" + field + "': cannot read " + std::string(py::str(py::type::of(v))) + " as a number");
    }
    if (std::isinf(d)) throw Error("field '" + field + "': infinite numbers are not values");
    buf.numbers.push_back(d);  // NaN stays NaN: NULL
    buf.has_text.push_back(0);
  } else {
    throw Error("field '" + field + "': unsupported value of type " + std::string(py::str(py::type::of(v))) +
                " (use None, int, float, str or assoc.Dual)");
  }
}

LoadedColumn column_from_cells(std::string name, const CellBuffer& buf) {
  ColumnBuilder cb(std::move(name));
  cb.reserve(buf.numbers.size());
  std::size_t t = 0;
  for (std::size_t i = 0; i < buf.numbers.size(); ++i) {
    const double d = buf.numbers[i];
    if (buf.has_text[i]) {
      const std::string& text = buf.texts[t++];
      cb.add(std::isnan(d) ? DualView::of_text(text) : DualView::of_dual(d, text));
    } else if (std::isnan(d)) {
      cb.add_null();
    } else {
      cb.add(DualView::of_number(d));
    }
  }
  return cb.finish();
}

LoadedColumn column_from_doubles(std::string name, const double* data, std::size_t n) {
  ColumnBuilder cb(std::move(name));
  cb.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(data[i])) {
      cb.add_null();
    } else {
      if (std::isinf(data[i])) throw Error("infinite numbers are not values");
      cb.add(DualView::of_number(data[i]));
    }
  }
  return cb.finish();
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

const Column& find_column(const DataModel& model, const std::string& table, const std::string& field) {
  const Table& t = model.table(table);
  const int f = model.find_field(field);
  const int c = f < 0 ? -1 : t.column_of(static_cast<std::uint32_t>(f));
  if (c < 0) throw Error("table '" + table + "' has no field '" + field + "'");
  return t.columns[static_cast<std::size_t>(c)];
}

}  // namespace

const char* contiguous_bytes(const py::buffer_info& info, const char* what) {
  if (info.ndim != 1 || info.itemsize != 1 || (info.strides.size() == 1 && info.strides[0] != 1))
    throw Error(std::string(what) + " needs contiguous bytes");
  return static_cast<const char*>(info.ptr);
}

py::object symbol_to_python(const SymbolTable& symbols, std::uint32_t i) {
  const bool num = symbols.has_number(i);
  const bool txt = symbols.has_text(i);
  if (num && txt) return py::cast(Dual{symbols.number(i), std::string(symbols.text(i))});
  if (txt) return py::str(symbols.text(i).data(), symbols.text(i).size());
  const double d = symbols.number(i);
  if (d == std::trunc(d) && std::fabs(d) < 9007199254740992.0) return py::int_(static_cast<long long>(d));
  return py::float_(d);
}

void bind_model(py::module_& m) {
  m.def("set_threads", &set_threads, py::arg("n"), "Threads heavy work may use (0 = all logical cores).");
  m.def("threads", &threads, "Threads heavy work uses now.");
  m.def("logical_cores", &logical_cores, "Logical cores of this machine.");
  m.def("total_memory", &total_memory, "Physical memory of this machine, in bytes.");

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
        d["calls"] = s.calls;
        d["selections"] = s.selections;
        d["cache"] = py::dict(py::arg("hits") = s.cache_hits, py::arg("lookups") = s.cache_lookups,
                              py::arg("added") = s.cache_added, py::arg("replaced") = s.cache_replaced,
                              py::arg("bytes_added") = s.cache_bytes_added);
        d["session"] = py::dict(py::arg("active") = s.sessions_active, py::arg("total") = s.sessions_total);
        d["users"] = py::dict(py::arg("active") = s.users_active, py::arg("total") = s.users_total);
        return d;
      },
      "The engine's own counters: calls, selections, cache, sessions and users.");

  py::class_<Dual>(m, "Dual", "A value with both a number and a text (such as a formatted date).")
      .def(py::init([](double number, std::string text) { return Dual{number, std::move(text)}; }),
           py::arg("number"), py::arg("text"))
      .def_readonly("number", &Dual::number)
      .def_readonly("text", &Dual::text)
      .def("__eq__",
           [](const Dual& a, const py::object& b) {
             if (!py::isinstance<Dual>(b)) return false;
             const Dual& d = b.cast<const Dual&>();
             return a.number == d.number && a.text == d.text;
           })
      .def("__hash__", [](const Dual& a) { return py::hash(py::make_tuple(a.number, a.text)); })
      .def("__repr__", [](const Dual& a) {
        return "Dual(" + std::string(py::repr(py::float_(a.number))) + ", " + std::string(py::repr(py::str(a.text))) + ")";
      })
      .def(py::pickle([](const Dual& a) { return py::make_tuple(a.number, a.text); },
                      [](const py::tuple& t) { return Dual{t[0].cast<double>(), t[1].cast<std::string>()}; }));

  py::class_<ModelBuilder>(m, "ModelBuilder", "Collects tables and builds a model.")
      .def(py::init<>())
      .def(
          "add_columns",
          [](ModelBuilder& b, const std::string& name, const py::dict& columns) {
            LoadedTable t;
            t.name = name;
            bool first = true;
            for (auto item : columns) {
              if (!py::isinstance<py::str>(item.first)) throw Error("table '" + name + "': field names must be strings");
              std::string field = item.first.cast<std::string>();
              py::handle values = item.second;
              LoadedColumn col;
              std::size_t n = 0;
              if (is_numpy_numeric(values)) {
                auto arr = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(values);
                if (!arr || arr.ndim() != 1) throw Error("field '" + field + "': a column must be one-dimensional");
                n = static_cast<std::size_t>(arr.shape(0));
                const double* data = arr.data();
                py::gil_scoped_release release;
                CpuScope scope(&b.cpu());
                col = column_from_doubles(field, data, n);
              } else {
                if (py::isinstance<py::str>(values) || py::isinstance<py::bytes>(values) || !py::hasattr(values, "__iter__"))
                  throw Error("field '" + field + "': a column must be a sequence of values");
                CellBuffer buf;
                if (py::hasattr(values, "__len__")) buf.numbers.reserve(py::len(values));
                for (auto v : values) add_python_value(buf, v, field);
                n = buf.numbers.size();
                py::gil_scoped_release release;
                CpuScope scope(&b.cpu());
                col = column_from_cells(field, buf);
              }
              if (first) {
                t.rows = n;
                first = false;
              } else if (n != t.rows) {
                throw Error("table '" + name + "': field '" + field + "' has " + std::to_string(n) +
                            " values, the fields before it " + std::to_string(t.rows));
              }
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
            Counters::instance().call();
            py::gil_scoped_release release;
            return PyModel{b.build()};
          },
          "Finishes the model.");

  py::class_<PyModel>(m, "DataModel", "An app's loaded data: fields and tables.")
      .def(
          "metadata",
          [](const PyModel& p) {
            Counters::instance().call();
            return metadata_dict(*p.model);
          },
          "DataModelMetadata as a dict.")
      .def("table_names",
           [](const PyModel& p) {
             std::vector<std::string> out;
             for (const auto& t : p.model->tables())
               if (!t.is_system) out.push_back(t.name);
             return out;
           },
           "Data table names (synthetic key tables included), in load order.")
      .def("field_names",
           [](const PyModel& p) {
             std::vector<std::string> out;
             for (const auto& f : p.model->fields()) out.push_back(f.name);
             return out;
           })
      .def("table_rows", [](const PyModel& p, const std::string& t) { return p.model->table(t).rows; })
      .def("table_fields",
           [](const PyModel& p, const std::string& t) {
             std::vector<std::string> out;
             for (const auto& c : p.model->table(t).columns) out.push_back(p.model->fields()[c.field].name);
             return out;
           })
      .def(
          "column",
          [](const PyModel& p, const std::string& table, const std::string& field) {
            const Column& c = find_column(*p.model, table, field);
            const SymbolTable& symbols = p.model->fields()[c.field].symbols;
            std::vector<std::uint32_t> rows(c.index.size());
            {
              py::gil_scoped_release release;
              c.index.decode(0, rows.size(), rows.data());
            }
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
          py::arg("table"), py::arg("field"), "A column's values in row order (None for NULL).")
      .def(
          "column_indices",
          [](const PyModel& p, const std::string& table, const std::string& field) {
            const Column& c = find_column(*p.model, table, field);
            py::array_t<std::int64_t> out(static_cast<py::ssize_t>(c.index.size()));
            std::int64_t* dst = out.mutable_data();
            py::gil_scoped_release release;
            constexpr std::size_t kBlock = 4096;
            std::uint32_t tmp[kBlock];
            for (std::size_t b = 0; b < c.index.size(); b += kBlock) {
              const std::size_t k = std::min(kBlock, c.index.size() - b);
              c.index.decode(b, k, tmp);
              for (std::size_t i = 0; i < k; ++i) dst[b + i] = tmp[i] == kNull ? -1 : static_cast<std::int64_t>(tmp[i]);
            }
            return out;
          },
          py::arg("table"), py::arg("field"), "A column's symbol indexes in row order (-1 for NULL).")
      .def(
          "symbols",
          [](const PyModel& p, const std::string& field) {
            const int f = p.model->find_field(field);
            if (f < 0) throw Error("no field named '" + field + "'");
            const SymbolTable& s = p.model->fields()[static_cast<std::size_t>(f)].symbols;
            py::list out(s.size());
            for (std::uint32_t i = 0; i < s.size(); ++i) out[i] = symbol_to_python(s, i);
            return out;
          },
          py::arg("field"), "A field's distinct values in symbol order.")
      .def(
          "bit_width",
          [](const PyModel& p, const std::string& table, const std::string& field) {
            return find_column(*p.model, table, field).index.bit_width();
          },
          py::arg("table"), py::arg("field"), "Bits per row of a column's packed index.");
}

}  // namespace assoc::py_bind
