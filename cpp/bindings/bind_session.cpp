// Selections: the associative model of an app, sessions, and the result cache.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "assoc/error.hpp"
#include "assoc/result_cache.hpp"
#include "assoc/selection.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

// The Python-side handle of an app's associative model (one per app, shared by its sessions).
struct PyAssociativeModel {
  std::shared_ptr<const AssociativeModel> impl;
};

py::list values_of(const SymbolTable& symbols, const Bitset& set) {
  py::list out;
  set.for_each([&](std::size_t i) { out.append(symbol_to_python(symbols, static_cast<std::uint32_t>(i))); });
  return out;
}

py::array_t<std::int64_t> indices_of(const Bitset& set) {
  py::array_t<std::int64_t> out(static_cast<py::ssize_t>(set.count()));
  std::int64_t* dst = out.mutable_data();
  std::size_t k = 0;
  set.for_each([&](std::size_t i) { dst[k++] = static_cast<std::int64_t>(i); });
  return out;
}

std::shared_ptr<const FieldStates> states_of(const Session& s, const std::string& field, const std::string& state) {
  const std::uint32_t f = s.model().field_id(field);
  py::gil_scoped_release release;
  return s.field_states(f, state);
}

}  // namespace

void bind_session(py::module_& m) {
  m.def(
      "set_cache_limit", [](std::size_t bytes) { ResultCache::instance().set_limit(bytes); }, py::arg("bytes"),
      "Bytes of results the engine's result cache may hold (0 turns it off).");
  m.def(
      "cache_info",
      [] {
        const CacheInfo i = ResultCache::instance().info();
        return py::dict(py::arg("entries") = i.entries, py::arg("bytes") = i.bytes, py::arg("limit") = i.limit);
      },
      "Entries, bytes and byte limit of the engine's result cache.");
  m.def(
      "clear_cache", [] { ResultCache::instance().clear(); }, "Empties the engine's result cache.");

  py::class_<PyAssociativeModel>(m, "AssociativeModel", "A model with its link graph, ready for selections.")
      .def(py::init([](const PyModel& model) { return PyAssociativeModel{AssociativeModel::create(model.model)}; }),
           py::arg("model"))
      .def(
          "symbols_with_texts",
          [](const PyAssociativeModel& model, const std::string& field, const std::vector<std::string>& texts) {
            const std::uint32_t f = model.impl->field_id(field);
            std::vector<std::pair<std::uint32_t, std::uint32_t>> found;
            {
              py::gil_scoped_release release;
              found = model.impl->symbols_with_texts(f, texts);
            }
            const auto n = static_cast<py::ssize_t>(found.size());
            py::array_t<std::int64_t> symbols(n);
            py::array_t<std::int64_t> which(n);
            for (py::ssize_t i = 0; i < n; ++i) {
              symbols.mutable_data()[i] = found[static_cast<std::size_t>(i)].first;
              which.mutable_data()[i] = found[static_cast<std::size_t>(i)].second;
            }
            return py::make_tuple(symbols, which);
          },
          py::arg("field"), py::arg("texts"),
          "The symbol indexes, in order, whose text is one of `texts` (a bare number's: canonical), and "
          "beside them the position in `texts` of the text each has.");

  py::class_<RowMask, std::shared_ptr<RowMask>>(
      m, "RowMask", "Section access: the rows one user's reduction leaves, shared by their sessions.")
      .def(py::init([](const PyAssociativeModel& model, const std::map<std::string, std::vector<std::int64_t>>& reduction) {
             SelectionState state;
             for (const auto& [name, codes] : reduction) {
               const std::uint32_t f = model.impl->field_id(name);
               const std::uint64_t n = model.impl->data().fields()[f].symbols.size();
               std::vector<std::uint32_t> symbols;
               for (const std::int64_t c : codes)
                 if (c >= 0 && static_cast<std::uint64_t>(c) < n) symbols.push_back(static_cast<std::uint32_t>(c));
               if (symbols.empty()) {
                 state.set_empty(f);
               } else {
                 state.set(f, std::move(symbols));
               }
             }
             py::gil_scoped_release release;
             return std::const_pointer_cast<RowMask>(RowMask::create(model.impl, state));
           }),
           py::arg("model"), py::arg("reduction"),
           "The mask of a reduction: per field, the symbol indexes it keeps (a field absent is whole).")
      .def(
          "possible_rows",
          [](const RowMask& mask, const std::string& table) {
            return mask.rows()->possible.at(mask.model().table_id(table));
          },
          py::arg("table"), "How many rows of a table the mask keeps.")
      .def(
          "rows",
          [](const RowMask& mask, const std::string& table) -> py::object {
            const Bitset* rows = mask.rows()->rows.at(mask.model().table_id(table)).get();
            if (rows == nullptr) return py::none();
            return indices_of(*rows);
          },
          py::arg("table"), "The row positions of a table the mask keeps, in order (None: every row).")
      .def(
          "indices",
          [](const RowMask& mask, const std::string& field) {
            const std::uint32_t f = mask.model().field_id(field);
            const Bitset* values = nullptr;
            {
              py::gil_scoped_release release;
              values = &mask.values(f);
            }
            return indices_of(*values);
          },
          py::arg("field"), "The symbol indexes of a field on the rows the mask keeps, in order.")
      .def(
          "cardinal",
          [](const RowMask& mask, const std::string& field) {
            const std::uint32_t f = mask.model().field_id(field);
            py::gil_scoped_release release;
            return mask.cardinal(f);
          },
          py::arg("field"), "How many of a field's values are on the rows the mask keeps.")
      .def(
          "field_byte_size",
          [](const RowMask& mask, const std::string& field) {
            const std::uint32_t f = mask.model().field_id(field);
            py::gil_scoped_release release;
            return mask.field_byte_size(f);
          },
          py::arg("field"), "Bytes of a symbol table holding only the field's values on the kept rows.")
      .def(
          "table_byte_size",
          [](const RowMask& mask, const std::string& table, const std::vector<std::string>& fields) {
            const std::uint32_t t = mask.model().table_id(table);
            std::vector<std::uint32_t> columns;
            const Table& tab = mask.model().data().tables()[t];
            for (const auto& name : fields) {
              const int c = tab.column_of(mask.model().field_id(name));
              if (c < 0) throw Error("table '" + table + "' has no field '" + name + "'");
              columns.push_back(static_cast<std::uint32_t>(c));
            }
            py::gil_scoped_release release;
            std::size_t n = 0;
            for (const std::uint32_t c : columns) n += mask.column_byte_size(t, c);
            return n;
          },
          py::arg("table"), py::arg("fields"),
          "Bytes of the packed index data of the named columns of a table, for only the kept rows.");

  py::class_<Session>(m, "Session", "One user's selection state in an app.")
      .def(py::init([](const PyAssociativeModel& model, std::string user, std::shared_ptr<RowMask> mask) {
             if (mask && &mask->model() != model.impl.get()) throw Error("the row mask is another app's");
             return std::make_unique<Session>(model.impl, std::move(user), std::move(mask));
           }),
           py::arg("model"), py::arg("user") = "", py::arg("mask") = nullptr)
      .def_property_readonly("user", &Session::user)
      .def_property_readonly("closed", &Session::closed)
      .def("close", &Session::close, "Ends the session.")
      .def(
          "select",
          [](Session& s, const std::string& field, const py::iterable& values, const std::string& state) {
            const std::uint32_t f = s.model().field_id(field);
            Cells cells;
            for (auto v : values) cells.add(v, "");
            const std::vector<DualView> views = cells.views();
            py::gil_scoped_release release;
            s.select_values(f, views, state);
          },
          py::arg("field"), py::arg("values"), py::arg("state") = "$", "Replaces a field's selection; values the field lacks are ignored.")
      .def(
          "select_indices",
          [](Session& s, const std::string& field,
             const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& indices,
             const std::string& state) {
            const std::uint32_t f = s.model().field_id(field);
            // An array of a million indexes is read as it is (a list goes through numpy).
            const std::vector<std::int64_t> codes(indices.data(), indices.data() + indices.size());
            py::gil_scoped_release release;
            s.select_indices(f, codes, state);
          },
          py::arg("field"), py::arg("indices"), py::arg("state") = "$",
          "Replaces a field's selection by symbol indexes; indexes out of range are ignored.")
      .def(
          "selected",
          [](const Session& s, const std::string& field, const std::string& state) {
            const std::vector<std::uint32_t> found = s.selected(s.model().field_id(field), state);
            py::array_t<std::int64_t> out(static_cast<py::ssize_t>(found.size()));
            std::copy(found.begin(), found.end(), out.mutable_data());
            return out;
          },
          py::arg("field"), py::arg("state") = "$",
          "The symbol indexes selected in a field, ascending, as the selection holds them.")
      .def(
          "set_search",
          [](Session& s, const std::string& field, const std::string& text, const std::string& state) {
            s.set_search(s.model().field_id(field), text, state);
          },
          py::arg("field"), py::arg("text"), py::arg("state") = "$",
          "Records the search text that made a field's present selection.")
      .def(
          "search",
          [](const Session& s, const std::string& field, const std::string& state) {
            return s.search(s.model().field_id(field), state);
          },
          py::arg("field"), py::arg("state") = "$",
          "The search text of a field's selection (\"\" when no search made it).")
      .def(
          "clear",
          [](Session& s, const std::string& state) {
            py::gil_scoped_release release;
            s.clear(state);
          },
          py::arg("state") = "$", "Clears every selection of a state.")
      .def(
          "clear_field",
          [](Session& s, const std::string& field, const std::string& state) {
            const std::uint32_t f = s.model().field_id(field);
            py::gil_scoped_release release;
            s.clear_field(f, state);
          },
          py::arg("field"), py::arg("state") = "$", "Clears one field's selection.")
      .def(
          "selections",
          [](const Session& s, const std::string& name) {
            const SelectionState state = s.selection(name);
            const auto& fields = s.model().data().fields();
            py::dict out;
            for (const auto& [f, symbols] : state.fields()) {
              py::list values;
              for (const std::uint32_t sym : symbols) values.append(symbol_to_python(fields[f].symbols, sym));
              out[py::str(fields[f].name)] = values;
            }
            return out;
          },
          py::arg("state") = "$", "The selected values per field, in symbol order.")
      .def("add_state", &Session::add_state, py::arg("name"), "Adds an alternate state with no selection.")
      .def("remove_state", &Session::remove_state, py::arg("name"), "Removes an alternate state.")
      .def("state_names", &Session::state_names, "The default state '$', then the alternate states by name.")
      .def(
          "state",
          [](const Session& s, const std::string& field, const std::string& state_name) {
            const auto st = states_of(s, field, state_name);
            const SymbolTable& symbols = s.model().data().field(field).symbols;
            py::dict out;
            for (const ValueState state : kValueStates)
              out[py::str(std::string(name_of(state)))] = values_of(symbols, st->values(state));
            return out;
          },
          py::arg("field"), py::arg("state") = "$", "Values of a field by state, each list in symbol order.")
      .def(
          "counts",
          [](const Session& s, const std::string& field, const std::string& state_name) {
            const auto st = states_of(s, field, state_name);
            py::dict out;
            for (const ValueState state : kValueStates) out[py::str(std::string(name_of(state)))] = st->count(state);
            return out;
          },
          py::arg("field"), py::arg("state") = "$", "How many values of a field are in each state.")
      .def(
          "indices",
          [](const Session& s, const std::string& field, const std::string& which, const std::string& in_state) {
            const ValueState state = value_state_named(which);
            return indices_of(states_of(s, field, in_state)->values(state));
          },
          py::arg("field"), py::arg("state"), py::arg("in_state") = "$", "Symbol indexes of a field's values in one state, in order.")
      .def(
          "state_codes",
          [](const Session& s, const std::string& field, bool show_alternatives, const std::string& in_state) {
            const auto st = states_of(s, field, in_state);
            const std::size_t n = s.model().data().fields()[s.model().field_id(field)].symbols.size();
            py::array_t<std::int8_t> out(static_cast<py::ssize_t>(n));
            std::int8_t* code = out.mutable_data();
            // The codes of assoc.field_order: selected 0, possible 1, alternative 2, selected
            // but excluded 3, excluded 4 (alternatives count as excluded unless shown).
            std::fill_n(code, n, std::int8_t{4});
            const auto mark = [&](const Bitset& set, std::int8_t c) {
              set.for_each([&](std::size_t i) {
                if (i < n) code[i] = c;  // a state's bits past the symbols (NULL's) name no value
              });
            };
            mark(st->possible, 1);
            if (show_alternatives) mark(st->alternative, 2);
            mark(st->selected, 0);
            mark(st->selected_excluded, 3);
            return out;
          },
          py::arg("field"), py::arg("show_alternatives"), py::arg("in_state") = "$",
          "Each of a field's values' state as a code, in symbol order: selected 0, possible 1, "
          "alternative 2 (4 unless shown), selected but excluded 3, excluded 4.")
      .def(
          "possible_rows",
          [](const Session& s, const std::string& table, const std::string& state) {
            const std::uint32_t t = s.model().table_id(table);
            py::gil_scoped_release release;
            return s.possible_rows(t, state);
          },
          py::arg("table"), py::arg("state") = "$", "How many rows of a table are possible.");
}

}  // namespace assoc::py_bind
