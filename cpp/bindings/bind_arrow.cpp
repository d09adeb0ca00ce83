// Arrow PyCapsule interface: streams in (ScriptTable.read_arrow) and out (ArrowExport, whose
// __arrow_c_stream__ and __arrow_c_schema__ pyarrow, polars and DuckDB read).
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "assoc/arrow_c.hpp"
#include "assoc/script_column.hpp"
#include "assoc/selection.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

ArrowDuals duals_named(const std::string& name) {
  if (name == "number") return ArrowDuals::kNumber;
  if (name == "text") return ArrowDuals::kText;
  if (name == "struct") return ArrowDuals::kStruct;
  throw Error("duals must be \"number\", \"text\" or \"struct\", not \"" + name + "\"");
}

// Columns ready to go out, and whatever keeps the data they point into alive.
struct ArrowExport {
  std::shared_ptr<const void> owner;
  ArrowExportTable table;
  ArrowDuals duals = ArrowDuals::kNumber;
};

template <typename T>
py::object capsule_of(std::unique_ptr<T> value, const char* name, void (*destroy)(PyObject*)) {
  PyObject* cap = PyCapsule_New(value.get(), name, destroy);
  if (cap == nullptr) {
    if (value->release != nullptr) value->release(value.get());
    throw py::error_already_set();
  }
  value.release();
  return py::reinterpret_steal<py::object>(cap);
}

void destroy_stream(PyObject* cap) {
  auto* s = static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(cap, "arrow_array_stream"));
  if (s == nullptr) return;
  if (s->release != nullptr) s->release(s);
  delete s;
}

void destroy_schema(PyObject* cap) {
  auto* s = static_cast<ArrowSchema*>(PyCapsule_GetPointer(cap, "arrow_schema"));
  if (s == nullptr) return;
  if (s->release != nullptr) s->release(s);
  delete s;
}

// The columns of a model's table (its rows, or those `rows` keeps).
ArrowExport table_export(std::shared_ptr<const void> owner, const DataModel& model, const std::string& name,
                         const Bitset* rows, ArrowDuals duals) {
  const Table& t = model.table(name);
  ArrowExport out;
  out.owner = std::move(owner);
  out.duals = duals;
  out.table.rows = t.rows;
  out.table.row_filter = rows;
  for (const Column& c : t.columns) {
    ArrowExportColumn col;
    col.name = model.fields()[c.field].name;
    col.symbols = &model.fields()[c.field].symbols;
    col.index = &c.index;
    out.table.columns.push_back(std::move(col));
  }
  return out;
}

// Section access: every symbol column's dictionary cut to the values the mask's rows hold, its
// codes mapped into it, so that no value the user does not see goes out. `field_of` names each
// column's field (kNull: a column of numbers or of another symbol table, left as it is).
void mask_columns(ArrowExport& e, const RowMask& mask, const std::vector<std::uint32_t>& field_of) {
  struct Masked {
    std::shared_ptr<const void> owner;
    std::vector<std::unique_ptr<SymbolTable>> symbols;
    std::vector<std::unique_ptr<std::vector<std::uint32_t>>> maps;
  };
  auto masked = std::make_shared<Masked>();
  masked->owner = std::move(e.owner);
  const auto& fields = mask.model().data().fields();
  for (std::size_t c = 0; c < e.table.columns.size(); ++c) {
    ArrowExportColumn& col = e.table.columns[c];
    if (col.symbols == nullptr || field_of[c] == kNull) continue;
    const SymbolTable& all = fields[field_of[c]].symbols;
    const Bitset& shown = mask.values(field_of[c]);
    if (shown.count() == all.size()) continue;
    auto map = std::make_unique<std::vector<std::uint32_t>>(all.size(), kNull);
    SymbolTableBuilder kept;
    shown.for_each([&](std::size_t i) {
      if (i < all.size()) (*map)[i] = kept.append(all.value(static_cast<std::uint32_t>(i)));
    });
    masked->symbols.push_back(std::make_unique<SymbolTable>(kept.finish()));
    col.typed_by = &all;
    col.symbols = masked->symbols.back().get();
    col.symbol_map = map.get();
    masked->maps.push_back(std::move(map));
  }
  e.owner = std::move(masked);
}

// Every column of codes with its dictionary cut to the symbols its rows use (a cube's values,
// its calculated dimensions' too, are then only those of the rows it has).
void used_symbols_only(ArrowExport& e) {
  struct Used {
    std::shared_ptr<const void> owner;
    std::vector<std::unique_ptr<SymbolTable>> symbols;
    std::vector<std::unique_ptr<std::vector<std::uint32_t>>> codes;
  };
  auto used = std::make_shared<Used>();
  used->owner = std::move(e.owner);
  for (ArrowExportColumn& col : e.table.columns) {
    if (col.symbols == nullptr || col.codes == nullptr) continue;
    const SymbolTable& all = *col.symbols;
    std::vector<std::uint32_t> map(all.size(), kNull);
    for (const std::uint32_t c : *col.codes)
      if (c < all.size()) map[c] = 0;
    SymbolTableBuilder kept;
    for (std::uint32_t i = 0; i < all.size(); ++i)
      if (map[i] != kNull) map[i] = kept.append(all.value(i));
    auto codes = std::make_unique<std::vector<std::uint32_t>>(col.codes->size());
    for (std::size_t r = 0; r < codes->size(); ++r) {
      const std::uint32_t c = (*col.codes)[r];
      (*codes)[r] = c < all.size() ? map[c] : kNull;
    }
    used->symbols.push_back(std::make_unique<SymbolTable>(kept.finish()));
    if (col.typed_by == nullptr) col.typed_by = &all;
    col.symbols = used->symbols.back().get();
    col.codes = codes.get();
    used->codes.push_back(std::move(codes));
  }
  e.owner = std::move(used);
}

std::size_t export_rows(const ArrowExport& e) {
  return e.table.row_filter != nullptr ? e.table.row_filter->count() : e.table.rows;
}

// A list object's page: the field's values at `codes` (in page order; checked against its symbol
// table), their symbol indexes as int64 (`elem`) and their states as a dictionary of
// `state_names`. Every dictionary holds only the page's values, so a section access reduction
// (the caller's codes are the user's) shows nothing beyond them.
ArrowExport list_page_export(std::shared_ptr<const AssociativeModel> model, const std::string& field,
                             const std::vector<std::int64_t>& codes, const std::vector<std::uint8_t>& states,
                             const std::vector<std::string>& state_names, const std::vector<std::string>& names,
                             ArrowDuals duals) {
  const DataModel& data = model->data();
  const int f = data.find_field(field);
  if (f < 0) throw Error("field not found: " + field);
  const SymbolTable& symbols = data.fields()[static_cast<std::size_t>(f)].symbols;
  if (states.size() != codes.size()) throw Error("a list page needs one state per value");
  if (names.size() != 3) throw Error("a list page has three columns: value, elem, state");
  struct Page {
    std::shared_ptr<const AssociativeModel> model;
    std::vector<std::uint32_t> values, elems, states;
    SymbolTable elem_symbols, state_symbols;
  };
  auto page = std::make_shared<Page>();
  SymbolTableBuilder elems, state_texts;
  for (const std::string& n : state_names) state_texts.append(DualView::of_text(n));
  page->values.reserve(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] < 0 || static_cast<std::uint64_t>(codes[i]) >= symbols.size())
      throw Error("list page: no value " + std::to_string(codes[i]) + " in field " + field);
    if (states[i] >= state_names.size()) throw Error("list page: unknown state " + std::to_string(states[i]));
    page->values.push_back(static_cast<std::uint32_t>(codes[i]));
    page->elems.push_back(elems.append(DualView::of_number(static_cast<double>(codes[i]))));
    page->states.push_back(states[i]);
  }
  page->elem_symbols = elems.finish();
  page->state_symbols = state_texts.finish();
  page->model = std::move(model);
  ArrowExport out;
  out.duals = duals;
  out.table.rows = codes.size();
  ArrowExportColumn value, elem, state;
  value.name = names[0];
  value.symbols = &symbols;
  value.codes = &page->values;
  elem.name = names[1];
  elem.symbols = &page->elem_symbols;
  elem.codes = &page->elems;
  state.name = names[2];
  state.symbols = &page->state_symbols;
  state.codes = &page->states;
  out.table.columns = {std::move(value), std::move(elem), std::move(state)};
  out.owner = std::move(page);
  used_symbols_only(out);
  return out;
}

}  // namespace

py::object hypercube_arrow(std::shared_ptr<const AssociativeModel> model, std::shared_ptr<const Hypercube> cube,
                           const std::string& duals, const std::shared_ptr<const RowMask>& mask) {
  ArrowExport out;
  out.duals = duals_named(duals);
  const auto& fields = model->data().fields();
  const HypercubeSpec& spec = cube->spec();
  out.table.rows = cube->size();
  for (std::size_t d = 0; d < spec.dimensions.size(); ++d) {
    ArrowExportColumn col;
    col.name = spec.dimensions[d];
    col.symbols = &fields.at(cube->dimension_field(d)).symbols;
    col.codes = &cube->codes(d);
    out.table.columns.push_back(std::move(col));
  }
  for (std::size_t m = 0; m < spec.measures.size(); ++m) {
    ArrowExportColumn col;
    col.name = spec.measures[m];
    if (cube->only_field(m) != kNull) {
      col.symbols = &fields.at(cube->only_field(m)).symbols;
      col.codes = &cube->only_symbols(m);
    } else {
      col.numbers = &cube->values(m);
    }
    out.table.columns.push_back(std::move(col));
  }
  struct Owner {
    std::shared_ptr<const AssociativeModel> model;
    std::shared_ptr<const Hypercube> cube;
  };
  out.owner = std::make_shared<Owner>(Owner{std::move(model), std::move(cube)});
  if (mask) used_symbols_only(out);  // section access: no dictionary holds a value the user lacks
  return py::cast(std::move(out));
}

void bind_arrow(py::module_& m) {
  py::class_<ArrowExport>(m, "ArrowExport",
                          "Columns that Arrow consumers read through the PyCapsule interface\n"
                          "(pyarrow.table(x), polars.DataFrame(x), DuckDB).")
      .def_property_readonly("num_rows", &export_rows)
      .def_property_readonly("column_names",
                             [](const ArrowExport& e) {
                               std::vector<std::string> out;
                               for (const auto& c : e.table.columns) out.push_back(c.name);
                               return out;
                             })
      .def(
          "__arrow_c_schema__",
          [](const ArrowExport& e) {
            auto schema = std::make_unique<ArrowSchema>();
            {
              py::gil_scoped_release release;
              export_arrow_schema(e.table, e.duals, schema.get());
            }
            return capsule_of(std::move(schema), "arrow_schema", &destroy_schema);
          },
          "The schema (a struct of the columns) as an arrow_schema capsule.")
      .def(
          "__arrow_c_stream__",
          [](const ArrowExport& e, const py::object& requested_schema) {
            (void)requested_schema;  // the columns go out in their own types (allowed by the protocol)
            auto stream = std::make_unique<ArrowArrayStream>();
            {
              py::gil_scoped_release release;
              export_arrow_stream(e.table, e.duals, stream.get());
            }
            return capsule_of(std::move(stream), "arrow_array_stream", &destroy_stream);
          },
          py::arg("requested_schema") = py::none(), "The rows as an arrow_array_stream capsule (one batch).");

  py::object model = m.attr("DataModel");
  model.attr("arrow") = py::cpp_function(
      [](const PyModel& p, const std::string& table, const std::string& duals) {
        return table_export(p.model, *p.model, table, nullptr, duals_named(duals));
      },
      py::name("arrow"), py::is_method(model), py::arg("table"), py::arg("duals"),
      "A table's rows for Arrow consumers.");

  py::object session = m.attr("Session");
  session.attr("arrow_table") = py::cpp_function(
      [](const Session& s, const std::string& table, const std::string& duals) {
        const ArrowDuals how = duals_named(duals);
        struct Owner {
          std::shared_ptr<const AssociativeModel> model;
          std::shared_ptr<const RowStates> rows;
        };
        auto owner = std::make_shared<Owner>();
        owner->model = s.model().shared_from_this();
        const std::uint32_t t = s.model().table_id(table);
        {
          py::gil_scoped_release release;
          owner->rows = s.snapshot().second;
        }
        const Bitset* rows = t < owner->rows->rows.size() ? owner->rows->rows[t].get() : nullptr;
        const DataModel& data = owner->model->data();
        ArrowExport out = table_export(owner, data, table, rows, how);
        if (s.mask()) {
          std::vector<std::uint32_t> field_of;
          for (const Column& c : data.tables()[t].columns) field_of.push_back(c.field);
          mask_columns(out, *s.mask(), field_of);
        }
        return out;
      },
      py::name("arrow_table"), py::is_method(session), py::arg("table"), py::arg("duals"),
      "A table's possible rows under the session's selections, for Arrow consumers.");

  session.attr("arrow_list_page") = py::cpp_function(
      [](const Session& s, const std::string& field, const std::vector<std::int64_t>& codes,
         const std::vector<std::uint8_t>& states, const std::vector<std::string>& state_names,
         const std::vector<std::string>& names, const std::string& duals) {
        return list_page_export(s.model().shared_from_this(), field, codes, states, state_names, names,
                                duals_named(duals));
      },
      py::name("arrow_list_page"), py::is_method(session), py::arg("field"), py::arg("codes"), py::arg("states"),
      py::arg("state_names"), py::arg("names"), py::arg("duals"),
      "A list object's page for Arrow consumers, columns `names`: the field's values `codes`\n"
      "(symbol indexes, in page order), each one's symbol index and\n"
      "its state (`state_names[states[i]]`).");

  py::object script_table = m.attr("ScriptTable");
  script_table.attr("read_arrow") = py::cpp_function(
      [](const py::object& capsule, const std::string& name, CpuAccount* cpu) {
        if (!PyCapsule_IsValid(capsule.ptr(), "arrow_array_stream"))
          throw Error("table '" + name + "': __arrow_c_stream__ did not give an arrow_array_stream capsule");
        auto* src = static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(capsule.ptr(), "arrow_array_stream"));
        // The stream is moved out of the capsule (its destructor then finds it released).
        ArrowArrayStream stream = *src;
        src->release = nullptr;
        // The producer's callbacks run with the GIL held (some call into Python); the batches
        // are read without it and released with it again.
        ArrowBatches batches;
        batches.read(&stream);
        ArrowImport imported;
        {
          py::gil_scoped_release release;
          imported = import_arrow(batches, name, cpu);
        }
        py::list temporal;
        for (const ArrowTemporal t : imported.temporal)
          temporal.append(t == ArrowTemporal::kDate ? "date" : t == ArrowTemporal::kTimestamp ? "timestamp" : "");
        ScriptTable out;
        out.table = std::move(imported.table);
        return py::make_tuple(std::move(out), temporal);
      },
      py::name("read_arrow"), py::arg("stream"), py::arg("name"), py::arg("cpu") = nullptr,
      "The table of an arrow_array_stream capsule, and per column \"date\", \"timestamp\" or \"\"\n"
      "(whose day-number symbols want set_texts).");
  script_table.attr("read_arrow") = py::staticmethod(script_table.attr("read_arrow"));
  script_table.attr("set_texts") = py::cpp_function(
      [](ScriptTable& s, std::size_t i, const std::vector<std::string>& texts, const std::string& type,
         const std::string& fmt, CpuAccount* cpu) {
        LoadedColumn& c = s.column(i);
        if (texts.size() != c.symbols.size())
          throw Error("set_texts takes one text per symbol: " + std::to_string(texts.size()) + " for " +
                      std::to_string(c.symbols.size()));
        py::gil_scoped_release release;
        std::vector<DualView> values(texts.size());
        for (std::uint32_t k = 0; k < c.symbols.size(); ++k) {
          const double v = c.symbols.number(k);
          if (!std::isfinite(v)) throw Error("set_texts: symbol " + std::to_string(k) + " has no number");
          values[k] = DualView::of_dual(v, texts[k]);
        }
        replace_symbols(c, values, cpu);
        c.format.type = type;
        c.format.fmt = fmt;
      },
      py::name("set_texts"), py::is_method(script_table), py::arg("column"), py::arg("texts"), py::arg("type"),
      py::arg("fmt"), py::arg("cpu") = nullptr,
      "Gives each numeric symbol of a column a text (dates: their formatted day numbers) and the\n"
      "column a number format (type DATE or TIMESTAMP, and its format).");
}

}  // namespace assoc::py_bind
