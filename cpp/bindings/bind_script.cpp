// Load scripts: tables held natively between statements, columns built from values + codes.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "assoc/csv.hpp"
#include "assoc/error.hpp"
#include "assoc/qvd.hpp"
#include "assoc/script_column.hpp"
#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

using Numbers = py::array_t<double, py::array::c_style | py::array::forcecast>;
using Codes = py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>;

// Values as Python hands them over: numbers (NaN: none) and texts (None: none; the whole
// argument None when no value has one); a value with neither part is NULL. `store` keeps the
// texts the views point into.
std::vector<ScriptValue> values_from_python(const std::string& name, const Numbers& numbers, const py::object& texts,
                                            std::vector<std::string>& store) {
  if (numbers.ndim() != 1) throw Error("column '" + name + "': numbers must be one-dimensional");
  const auto n_values = static_cast<std::size_t>(numbers.shape(0));
  std::vector<std::uint8_t> has_text(n_values, 0);
  if (!texts.is_none()) {
    const py::sequence seq = texts.cast<py::sequence>();
    if (static_cast<std::size_t>(py::len(seq)) != n_values)
      throw Error("column '" + name + "': texts and numbers differ in length");
    store.resize(n_values);
    for (std::size_t i = 0; i < n_values; ++i) {
      const py::handle t = seq[i];
      if (t.is_none()) continue;
      store[i] = t.cast<std::string>();
      has_text[i] = 1;
    }
  }
  const double* nums = numbers.data();
  std::vector<ScriptValue> values(n_values);
  for (std::size_t i = 0; i < n_values; ++i) {
    const double d = nums[i];
    if (std::isinf(d)) throw Error("column '" + name + "': infinite numbers are not values");
    if (has_text[i]) {
      values[i] = std::isnan(d) ? DualView::of_text(store[i]) : DualView::of_dual(d, store[i]);
    } else if (!std::isnan(d)) {
      values[i] = DualView::of_number(d);
    }
  }
  return values;
}

// A table read from the bytes of a contiguous buffer (bytes, or an mmap read in place) by
// `read`, without the GIL; `info` holds the buffer for the whole read.
// The readers count the calling thread too: `cpu` gets only the other threads' time.
template <typename Read>
ScriptTable read_file(const py::buffer& data, const char* what, CpuAccount* cpu, const Read& read) {
  const py::buffer_info info = data.request();
  const char* bytes = contiguous_bytes(info, what);
  const auto size = static_cast<std::size_t>(info.size);
  ScriptTable out;
  py::gil_scoped_release release;
  CpuAccount all;
  const std::int64_t caller_start = thread_cpu_ns();
  out.table = read(bytes, size, &all);
  if (cpu) cpu->add(all.ns() - (thread_cpu_ns() - caller_start));
  return out;
}

void check_rows(const LoadedTable& t, std::size_t n) {
  if (n != t.rows)
    throw Error("table '" + t.name + "': a column of " + std::to_string(n) + " rows, not " + std::to_string(t.rows));
}

}  // namespace

void bind_script(py::module_& m) {
  py::class_<CpuAccount>(m, "CpuAccount", "CPU time that worker threads spend on a job, in nanoseconds.")
      .def(py::init<>())
      .def_property_readonly("ns", &CpuAccount::ns);
  py::object builder = m.attr("ModelBuilder");
  builder.attr("charge_cpu") = py::cpp_function(
      [](ModelBuilder& b, std::int64_t ns) {
        if (ns < 0) throw Error("CPU time cannot be negative");
        b.cpu().add(ns);
      },
      py::name("charge_cpu"), py::is_method(builder), py::arg("ns"),
      "Adds CPU time spent on the model outside the builder (a script's statements) to its\nreload time.");
  py::class_<ScriptTable>(m, "ScriptTable", "A table a load script holds between statements.")
      .def_static(
          "read_csv",
          [](const py::buffer& data, const std::string& name, CpuAccount* cpu, const std::string& quoting) {
            CsvQuoting q = CsvQuoting::kRfc4180;
            if (quoting == "standard") {
              q = CsvQuoting::kStandard;
            } else if (quoting == "none") {
              q = CsvQuoting::kNone;
            } else if (quoting != "rfc4180") {
              throw Error("quoting must be 'rfc4180', 'standard' or 'none', not '" + quoting + "'");
            }
            return read_file(data, "read_csv", cpu, [&](const char* bytes, std::size_t size, CpuAccount* all) {
              return read_csv(bytes, size, name, all, q);
            });
          },
          py::arg("data"), py::arg("name"), py::arg("cpu") = nullptr, py::arg("quoting") = "rfc4180",
          "The table of a CSV file's bytes (quoting: 'rfc4180', 'standard' or 'none').")
      .def_static(
          "read_qvd",
          [](const py::buffer& data, const std::string& name, CpuAccount* cpu) {
            return read_file(data, "read_qvd", cpu, [&](const char* bytes, std::size_t size, CpuAccount* all) {
              LoadedTable t = read_qvd(reinterpret_cast<const std::uint8_t*>(bytes), size, all);
              t.name = name;
              return t;
            });
          },
          py::arg("data"), py::arg("name"), py::arg("cpu") = nullptr, "The table of a QVD file's bytes, named `name`.")
      .def(py::init([](const std::string& name, std::size_t rows) {
             ScriptTable out;
             out.table.name = name;
             out.table.rows = rows;
             return out;
           }),
           py::arg("name"), py::arg("rows"), "An empty table of `rows` rows; add_column adds its columns.")
      .def(
          "add_column",
          [](ScriptTable& s, const std::string& name, const Numbers& numbers, const py::object& texts,
             const Codes& codes, CpuAccount* cpu) {
            LoadedTable& t = s.get();
            if (codes.ndim() != 1) throw Error("column '" + name + "': codes must be one-dimensional");
            check_rows(t, static_cast<std::size_t>(codes.shape(0)));
            std::vector<std::string> store;
            const std::vector<ScriptValue> values = values_from_python(name, numbers, texts, store);
            py::gil_scoped_release release;
            t.columns.push_back(column_from_values(name, values, codes.data(), t.rows, cpu));
          },
          py::arg("name"), py::arg("numbers"), py::arg("texts"), py::arg("codes"), py::arg("cpu") = nullptr,
          "Adds a column whose row r holds value codes[r] (numbers[i] NaN: no number; texts None or\n"
          "texts[i] None: no text; neither: NULL; a negative code: NULL).")
      .def(
          "add_mapped_column",
          [](ScriptTable& s, const std::string& name, const Numbers& numbers, const py::object& texts,
             ScriptTable& source, std::size_t source_column, CpuAccount* cpu) {
            LoadedTable& t = s.get();
            const LoadedColumn& from = source.column(source_column);
            check_rows(t, from.index.size());
            std::vector<std::string> store;
            const std::vector<ScriptValue> values = values_from_python(name, numbers, texts, store);
            py::gil_scoped_release release;
            t.columns.push_back(column_mapping_symbols(name, from, values, cpu));
          },
          py::arg("name"), py::arg("numbers"), py::arg("texts"), py::arg("source"), py::arg("source_column"),
          py::arg("cpu") = nullptr,
          "Adds a column with the rows of a source column whose symbol k becomes value k.")
      .def_property(
          "name", [](ScriptTable& s) { return s.get().name; },
          [](ScriptTable& s, const std::string& name) { s.get().name = name; })
      .def_property_readonly("rows", [](ScriptTable& s) { return s.get().rows; })
      .def_property_readonly("fields",
                             [](ScriptTable& s) {
                               std::vector<std::string> out;
                               for (const auto& c : s.get().columns) out.push_back(c.name);
                               return out;
                             })
      .def(
          "symbols",
          [](ScriptTable& s, std::size_t i) {
            const SymbolTable& sym = s.column(i).symbols;
            py::array_t<double> numbers(static_cast<py::ssize_t>(sym.size()));
            double* dst = numbers.mutable_data();
            std::vector<std::uint32_t> at;
            py::list texts;
            for (std::uint32_t k = 0; k < sym.size(); ++k) dst[k] = sym.number(k);
            if (sym.any_text()) {
              for (std::uint32_t k = 0; k < sym.size(); ++k) {
                if (!sym.has_text(k)) continue;
                at.push_back(k);
                const std::string_view t = sym.text(k);
                texts.append(py::str(t.data(), t.size()));
              }
            }
            return py::make_tuple(numbers, py::array_t<std::uint32_t>(static_cast<py::ssize_t>(at.size()), at.data()),
                                  texts);
          },
          py::arg("column"),
          "A column's symbols: (numbers with NaN for none, indexes of the symbols with a text, those texts).")
      .def(
          "codes",
          [](ScriptTable& s, std::size_t i, CpuAccount* cpu) {
            const LoadedColumn& c = s.column(i);
            py::array_t<std::int32_t> out(static_cast<py::ssize_t>(c.index.size()));
            std::int32_t* dst = out.mutable_data();
            py::gil_scoped_release release;
            column_codes(c, dst, cpu);
            return out;
          },
          py::arg("column"), py::arg("cpu") = nullptr, "A column's symbol index per row, -1 for NULL.")
      .def(
          "number_candidates",
          [](ScriptTable& s, std::size_t i, const std::string& allowed, CpuAccount* cpu) {
            const SymbolTable& sym = s.column(i).symbols;
            std::vector<std::uint32_t> at;
            {
              py::gil_scoped_release release;
              at = number_candidates(sym, allowed, cpu);
            }
            py::list texts(at.size());
            for (std::size_t j = 0; j < at.size(); ++j) {
              const std::string_view t = sym.text(at[j]);
              texts[j] = py::str(t.data(), t.size());
            }
            return py::make_tuple(py::array_t<std::uint32_t>(static_cast<py::ssize_t>(at.size()), at.data()), texts);
          },
          py::arg("column"), py::arg("allowed"), py::arg("cpu") = nullptr,
          "The column's symbols that are text without a number, made only of `allowed` characters\n"
          "and holding a digit: (symbol indexes, texts).")
      .def(
          "set_numbers",
          [](ScriptTable& s, std::size_t i, const py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>& at,
             const py::array_t<double, py::array::c_style | py::array::forcecast>& numbers, CpuAccount* cpu) {
            LoadedColumn& c = s.column(i);
            if (at.ndim() != 1 || numbers.ndim() != 1 || at.shape(0) != numbers.shape(0))
              throw Error("set_numbers takes one number per symbol index");
            const std::uint32_t* idx = at.data();
            const double* nums = numbers.data();
            const auto n = static_cast<std::size_t>(at.shape(0));
            py::gil_scoped_release release;
            std::vector<DualView> values(c.symbols.size());
            for (std::uint32_t k = 0; k < c.symbols.size(); ++k) values[k] = c.symbols.value(k);
            for (std::size_t j = 0; j < n; ++j) {
              if (idx[j] >= values.size()) throw Error("set_numbers: symbol index out of range");
              if (!std::isfinite(nums[j])) throw Error("set_numbers: numbers must be finite");
              values[idx[j]].number = nums[j];
            }
            // The views point into the old table, which replace_symbols reads before it lets go.
            replace_symbols(c, values, cpu);
          },
          py::arg("column"), py::arg("at"), py::arg("numbers"), py::arg("cpu") = nullptr,
          "Gives the symbols at `at` a number beside their text (equal ones merge, rows follow).")
      .def(
          "select",
          [](ScriptTable& s, const std::vector<std::pair<std::size_t, std::string>>& picks) {
            LoadedTable& t = s.get();
            ScriptTable out;
            out.table.name = t.name;
            out.table.rows = t.rows;
            out.table.comment = t.comment;
            for (const auto& [i, name] : picks) {
              LoadedColumn c = s.column(i);
              c.name = name;
              out.table.columns.push_back(std::move(c));
            }
            return out;
          },
          py::arg("columns"), "A table of some columns (by position, each with a new name), sharing no state.")
      .def(
          "add_to",
          [](ScriptTable& s, ModelBuilder& b) {
            LoadedTable t = std::move(s.get());
            s.table = LoadedTable{};
            s.table.name = t.name;  // kept for the error a later use gets
            s.taken = true;
            py::gil_scoped_release release;
            b.add(std::move(t));
          },
          py::arg("builder"), "Moves the table into a model builder (the table is empty afterwards).");
}

}  // namespace assoc::py_bind
