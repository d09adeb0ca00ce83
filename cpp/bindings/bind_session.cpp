// Selections: the associative model of an app, sessions, and the result cache.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "assoc/counters.hpp"
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

// The symbol a Python value names in a field, or kNull when it names none (None, NaN, or a
// value the field does not have).
std::uint32_t symbol_of(const AssociativeModel& m, std::uint32_t field, const py::handle& v,
                        const py::handle& dual_type) {
  if (v.is_none()) return kNull;
  if (py::isinstance<py::str>(v)) return m.find_text(field, v.cast<std::string>());
  if (py::isinstance(v, dual_type)) return m.find_number(field, v.attr("number").cast<double>());
  if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v) ||
      PyNumber_Check(v.ptr())) {
    double d;
    try {
      d = v.cast<double>();
    } catch (const py::cast_error&) {
      throw Error("cannot read " + std::string(py::str(py::type::of(v))) + " as a number");
    }
    return std::isnan(d) ? kNull : m.find_number(field, d);
  }
  throw Error("unsupported value of type " + std::string(py::str(py::type::of(v))) +
              " (use int, float, str or assoc.Dual)");
}

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

std::shared_ptr<const FieldStates> states_of(const Session& s, const std::string& field) {
  Counters::instance().call();
  const std::uint32_t f = s.model().field_id(field);
  py::gil_scoped_release release;
  return s.field_states(f);
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
           py::arg("model"));

  const py::object dual_type = m.attr("Dual");
  py::class_<Session>(m, "Session", "One user's selection state in an app.")
      .def(py::init([](const PyAssociativeModel& model, std::string user) {
             return std::make_unique<Session>(model.impl, std::move(user));
           }),
           py::arg("model"), py::arg("user") = "")
      .def_property_readonly("user", &Session::user)
      .def_property_readonly("closed", &Session::closed)
      .def("close", &Session::close, "Ends the session.")
      .def(
          "select",
          [dual_type](Session& s, const std::string& field, const py::iterable& values) {
            Counters::instance().call();
            const AssociativeModel& model = s.model();
            const std::uint32_t f = model.field_id(field);
            {
              py::gil_scoped_release release;
              model.prepare_lookup(f);
            }
            std::vector<std::uint32_t> symbols;
            for (auto v : values) {
              const std::uint32_t sym = symbol_of(model, f, v, dual_type);
              if (sym != kNull) symbols.push_back(sym);
            }
            py::gil_scoped_release release;
            s.select(f, std::move(symbols));
          },
          py::arg("field"), py::arg("values"), "Replaces a field's selection; values the field lacks are ignored.")
      .def(
          "select_indices",
          [](Session& s, const std::string& field, const std::vector<std::int64_t>& indices) {
            Counters::instance().call();
            const std::uint32_t f = s.model().field_id(field);
            const std::size_t n = s.model().data().fields()[f].symbols.size();
            std::vector<std::uint32_t> symbols;
            symbols.reserve(indices.size());
            for (const std::int64_t i : indices)
              if (i >= 0 && static_cast<std::uint64_t>(i) < n) symbols.push_back(static_cast<std::uint32_t>(i));
            py::gil_scoped_release release;
            s.select(f, std::move(symbols));
          },
          py::arg("field"), py::arg("indices"),
          "Replaces a field's selection by symbol indexes; indexes out of range are ignored.")
      .def(
          "clear",
          [](Session& s) {
            Counters::instance().call();
            py::gil_scoped_release release;
            s.clear();
          },
          "Clears every selection.")
      .def(
          "clear_field",
          [](Session& s, const std::string& field) {
            Counters::instance().call();
            const std::uint32_t f = s.model().field_id(field);
            py::gil_scoped_release release;
            s.clear_field(f);
          },
          py::arg("field"), "Clears one field's selection.")
      .def(
          "selections",
          [](const Session& s) {
            const SelectionState state = s.selection();
            const auto& fields = s.model().data().fields();
            py::dict out;
            for (const auto& [f, symbols] : state.fields()) {
              py::list values;
              for (const std::uint32_t sym : symbols) values.append(symbol_to_python(fields[f].symbols, sym));
              out[py::str(fields[f].name)] = values;
            }
            return out;
          },
          "The selected values per field, in symbol order.")
      .def(
          "state",
          [](const Session& s, const std::string& field) {
            const auto st = states_of(s, field);
            const SymbolTable& symbols = s.model().data().fields()[s.model().field_id(field)].symbols;
            Bitset excluded(st->selected.size());
            for (std::uint32_t i = 0; i < symbols.size(); ++i) excluded.set(i);
            excluded.and_not(st->selected);
            excluded.and_not(st->possible);
            excluded.and_not(st->alternative);
            py::dict out;
            out["selected"] = values_of(symbols, st->selected);
            out["possible"] = values_of(symbols, st->possible);
            out["alternative"] = values_of(symbols, st->alternative);
            out["excluded"] = values_of(symbols, excluded);
            return out;
          },
          py::arg("field"), "Values of a field by state, each list in symbol order.")
      .def(
          "counts",
          [](const Session& s, const std::string& field) {
            const auto st = states_of(s, field);
            return py::dict(py::arg("selected") = st->n_selected, py::arg("possible") = st->n_possible,
                            py::arg("alternative") = st->n_alternative, py::arg("excluded") = st->n_excluded);
          },
          py::arg("field"), "How many values of a field are in each state.")
      .def(
          "indices",
          [](const Session& s, const std::string& field, const std::string& which) {
            const auto st = states_of(s, field);
            if (which == "selected") return indices_of(st->selected);
            if (which == "possible") return indices_of(st->possible);
            if (which == "alternative") return indices_of(st->alternative);
            if (which == "selected_excluded") return indices_of(st->selected_excluded);
            if (which == "excluded") {
              Bitset excluded(st->selected.size());
              for (std::size_t i = 0; i + 1 < excluded.size(); ++i) excluded.set(i);
              excluded.and_not(st->selected);
              excluded.and_not(st->possible);
              excluded.and_not(st->alternative);
              return indices_of(excluded);
            }
            throw Error("unknown state '" + which +
                        "' (selected, possible, alternative, excluded or selected_excluded)");
          },
          py::arg("field"), py::arg("state"), "Symbol indexes of a field's values in one state, in order.")
      .def(
          "possible_rows",
          [](const Session& s, const std::string& table) {
            Counters::instance().call();
            const std::uint32_t t = s.model().table_id(table);
            py::gil_scoped_release release;
            return s.possible_rows(t);
          },
          py::arg("table"), "How many rows of a table are possible.");
}

}  // namespace assoc::py_bind
