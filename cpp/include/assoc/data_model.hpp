#pragma once
// An app's data: fields (each one symbol table shared by every table that has a column of
// that name) and tables (one bit-stuffed index per column).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "assoc/interpretation.hpp"
#include "assoc/packed_index.hpp"
#include "assoc/symbol_table.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {

// A field's number format as QVD headers carry it (NumberFormat element).
struct NumberFormat {
  std::string type = "UNKNOWN";  // UNKNOWN, ASCII, INTEGER, REAL, FIX, MONEY, DATE, TIME, TIMESTAMP, INTERVAL
  int n_dec = 0;
  int use_thou = 0;
  std::string fmt;
  std::string dec;
  std::string thou;
};

struct Column {
  std::uint32_t field = 0;  // index into DataModel::fields
  PackedIndex index;
};

struct Table {
  std::string name;
  std::size_t rows = 0;
  std::vector<Column> columns;
  bool is_system = false;
  bool is_synthetic = false;  // a `$Syn N Table`
  bool is_loose = false;
  std::string comment;
  // The fields the table was loaded with, in load order (its source view: fields that moved
  // into a synthetic key are read through it). A synthetic key table: its own columns.
  std::vector<std::uint32_t> loaded_fields;

  // Column position of a field in this table, or -1.
  int column_of(std::uint32_t field) const;
  std::size_t byte_size() const;
};

struct Field {
  std::string name;
  SymbolTable symbols;
  NumberFormat format;
  std::vector<std::string> source_tags;  // tags the source file gave ($date, $timestamp, …)
  std::vector<std::uint32_t> src_tables;  // tables holding the field, in load order
  std::uint64_t total_count = 0;
  bool is_system = false;
  bool is_hidden = false;
  bool is_key = false;
  bool is_keypart = false;
  bool is_syn = false;
  std::string comment;

  // Tags derived from the data and the model, in the order the engine reports them, then
  // the source's tags that are not derived ones (user tags a QVD header carries).
  std::vector<std::string> tags() const;
};

// Whether a tag is one the engine derives from the data and the model ($key, $numeric, …):
// a source's copy of it is not carried over.
bool is_derived_tag(std::string_view tag);

struct ReloadMeta {
  std::int64_t cpu_time_ns = 0;
  unsigned logical_cores = 0;
  std::uint64_t total_memory = 0;
};

class DataModel {
 public:
  const std::vector<Field>& fields() const { return fields_; }
  const std::vector<Table>& tables() const { return tables_; }
  const ReloadMeta& reload_meta() const { return reload_meta_; }

  // Field index by name, or -1.
  int find_field(const std::string& name) const;
  // Table index by name, or -1.
  int find_table(const std::string& name) const;
  const Table& table(const std::string& name) const;  // throws Error when unknown
  const Field& field(const std::string& name) const;  // throws Error when unknown
  // A table's column of a field; throws Error when the table or the column is unknown.
  const Column& column(const std::string& table, const std::string& field) const;
  // The names of the data tables (synthetic key tables included, system tables not), in load order.
  std::vector<std::string> data_table_names() const;
  // The names of a table's fields, in column order.
  std::vector<std::string> field_names(const Table& table) const;
  // The names of the fields a table was loaded with, in load order (its source view).
  std::vector<std::string> source_field_names(const Table& table) const;
  // Each row's symbol of `field` (kNull for NULL) in `table` as it was loaded: its column, or,
  // when the field moved into a synthetic key, the key table's value at the row's key (a key
  // table may read through a further key). Throws Error when the table was not loaded with it.
  std::vector<std::uint32_t> source_codes(const std::string& table, const std::string& field) const;

  // Total static bytes: symbol tables, indexes, and the model's own bookkeeping.
  std::size_t static_byte_size() const;

  // The number interpretation variables the app was loaded with (DateFormat, FirstWeekDay,
  // …), as the script left them; its chart functions use them.
  const Interpretation& interpretation() const {
    return interpretation_ ? *interpretation_ : Interpretation::defaults();
  }
  const std::vector<std::pair<std::string, std::string>>& interpretation_variables() const {
    return interpretation_variables_;
  }

 private:
  // source_codes() of one table into `out` (its rows); false when it does not reach the field.
  bool read_source(const Table& table, std::uint32_t field, std::uint32_t* out, std::size_t depth) const;

  friend class ModelBuilder;
  friend struct ModelAccess;
  std::vector<Field> fields_;
  std::vector<Table> tables_;
  std::unordered_map<std::string, std::uint32_t> field_ids_;
  std::unordered_map<std::string, std::uint32_t> table_ids_;
  ReloadMeta reload_meta_;
  std::shared_ptr<const Interpretation> interpretation_;
  std::vector<std::pair<std::string, std::string>> interpretation_variables_;
};

// Write access to a model under construction, for the passes that link tables.
struct ModelAccess {
  static std::vector<Field>& fields(DataModel& m) { return m.fields_; }
  static std::vector<Table>& tables(DataModel& m) { return m.tables_; }
  static std::unordered_map<std::string, std::uint32_t>& field_ids(DataModel& m) { return m.field_ids_; }
  static std::unordered_map<std::string, std::uint32_t>& table_ids(DataModel& m) { return m.table_ids_; }
};

// One table as a loader hands it over: its own symbol tables, not yet shared with others.
struct LoadedColumn {
  std::string name;
  SymbolTable symbols;
  PackedIndex index;
  NumberFormat format;
  std::vector<std::string> tags;
  std::string comment;  // the source's comment on the field (a QVD's <Comment>)
};

struct LoadedTable {
  std::string name;
  std::size_t rows = 0;
  std::vector<LoadedColumn> columns;
  std::string comment;  // the source's comment on the table
};

// Builds one column value by value (NULLs included), interning values into its own symbol table.
class ColumnBuilder {
 public:
  explicit ColumnBuilder(std::string name) : name_(std::move(name)) {}
  void reserve(std::size_t rows) { rows_.reserve(rows); }
  void add(const DualView& v) { rows_.push_back(symbols_.intern(v)); }
  void add_null() { rows_.push_back(kNull); }
  // A number: NaN is NULL; an infinity is no value (throws Error naming the field).
  void add_number(double v);
  // A number with its text: the number must be finite (throws Error naming the field).
  void add_dual(double v, std::string_view text);
  void add_text(std::string_view text) { add(DualView::of_text(text)); }
  // add_number for each of `n` numbers.
  void add_numbers(const double* values, std::size_t n);
  std::size_t rows() const { return rows_.size(); }
  LoadedColumn finish();

 private:
  [[noreturn]] void refuse_infinite() const;
  std::string name_;
  SymbolTableBuilder symbols_;
  std::vector<std::uint32_t> rows_;
};

// Collects loaded tables and builds the immutable DataModel: merges symbol tables of fields
// with the same name, then links tables.
class ModelBuilder {
 public:
  ModelBuilder();
  // Adds a table; a name already used gets a suffix (-1, -2, …) as Qlik does.
  void add(LoadedTable&& table);
  // CPU time spent loading so far (loaders add theirs here).
  CpuAccount& cpu() { return cpu_; }
  std::size_t table_count() const { return model_->tables_.size(); }
  // The interpretation variables (name, text) the model keeps; others are ignored.
  void set_interpretation(std::vector<std::pair<std::string, std::string>> variables);
  // Finishes the model; the builder is empty afterwards.
  std::shared_ptr<const DataModel> build();

 private:
  std::unique_ptr<DataModel> model_;
  CpuAccount cpu_;
};

}  // namespace assoc
