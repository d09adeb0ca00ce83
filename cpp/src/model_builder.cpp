#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "assoc/associative.hpp"
#include "assoc/data_model.hpp"
#include "assoc/error.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {

LoadedColumn ColumnBuilder::finish() {
  LoadedColumn c;
  c.name = std::move(name_);
  c.symbols = symbols_.finish();
  c.index = PackedIndex::pack(rows_.data(), rows_.size(), c.symbols.size());
  std::vector<std::uint32_t>().swap(rows_);
  return c;
}

void ColumnBuilder::add_number(double v) {
  if (std::isnan(v)) {
    add_null();
  } else {
    if (std::isinf(v)) refuse_infinite();
    add(DualView::of_number(v));
  }
}

void ColumnBuilder::refuse_infinite() const { throw Error("field '" + name_ + "': infinite numbers are not values"); }

void ColumnBuilder::add_dual(double v, std::string_view text) {
  if (!std::isfinite(v)) throw Error("field '" + name_ + "': a Dual needs a finite number");
  add(DualView::of_dual(v, text));
}

void ColumnBuilder::add_numbers(const double* values, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (std::isinf(values[i])) refuse_infinite();
  const std::size_t at = rows_.size();
  rows_.resize(at + n);
  symbols_.intern_numbers(values, n, rows_.data() + at);
}

ModelBuilder::ModelBuilder() : model_(std::make_unique<DataModel>()) {}

void ModelBuilder::set_interpretation(std::vector<std::pair<std::string, std::string>> variables) {
  auto ix = std::make_shared<const Interpretation>(Interpretation::from_variables(variables));
  model_->interpretation_ = std::move(ix);
  model_->interpretation_variables_ = std::move(variables);
}

void ModelBuilder::add(LoadedTable&& loaded) {
  CpuScope scope(&cpu_);
  DataModel& m = *model_;
  if (loaded.name.empty()) throw Error("a table needs a name");
  std::string name = loaded.name;
  for (int k = 1; m.table_ids_.count(name); ++k) name = loaded.name + "-" + std::to_string(k);

  // Column names must be unique within a table.
  std::unordered_set<std::string_view> names;
  names.reserve(loaded.columns.size());
  for (std::size_t i = 0; i < loaded.columns.size(); ++i) {
    if (loaded.columns[i].name.empty()) throw Error("table '" + loaded.name + "' has a field with an empty name");
    if (!names.insert(loaded.columns[i].name).second)
      throw Error("table '" + loaded.name + "' has the field '" + loaded.columns[i].name + "' twice");
    if (loaded.columns[i].index.size() != loaded.rows)
      throw Error("table '" + loaded.name + "': field '" + loaded.columns[i].name + "' has " +
                  std::to_string(loaded.columns[i].index.size()) + " values, the table " +
                  std::to_string(loaded.rows) + " rows");
  }

  Table table;
  table.name = name;
  table.rows = loaded.rows;
  table.comment = std::move(loaded.comment);
  for (auto& lc : loaded.columns) {
    auto it = m.field_ids_.find(lc.name);
    Column col;
    if (it == m.field_ids_.end()) {
      const auto id = static_cast<std::uint32_t>(m.fields_.size());
      Field f;
      f.name = lc.name;
      f.symbols = std::move(lc.symbols);
      f.format = std::move(lc.format);
      f.source_tags = std::move(lc.tags);
      f.comment = std::move(lc.comment);
      m.fields_.push_back(std::move(f));
      m.field_ids_.emplace(lc.name, id);
      col.field = id;
      col.index = std::move(lc.index);
    } else {
      Field& f = m.fields_[it->second];
      SymbolTableBuilder merged(std::move(f.symbols));
      std::vector<std::uint32_t> remap(lc.symbols.size());
      merged.intern_table(lc.symbols, remap.data());
      f.symbols = merged.finish();
      if (f.format.type == "UNKNOWN") f.format = std::move(lc.format);
      if (f.comment.empty()) f.comment = std::move(lc.comment);  // the first table's that has one
      for (auto& tag : lc.tags)
        if (std::find(f.source_tags.begin(), f.source_tags.end(), tag) == f.source_tags.end())
          f.source_tags.push_back(std::move(tag));
      col.field = it->second;
      bool identity = true;
      for (std::uint32_t s = 0; s < remap.size() && identity; ++s) identity = remap[s] == s;
      col.index = identity ? std::move(lc.index) : lc.index.remapped(remap, f.symbols.size(), &cpu_);
    }
    table.loaded_fields.push_back(col.field);
    table.columns.push_back(std::move(col));
  }
  m.table_ids_.emplace(name, static_cast<std::uint32_t>(m.tables_.size()));
  m.tables_.push_back(std::move(table));
}

std::shared_ptr<const DataModel> ModelBuilder::build() {
  {
    CpuScope scope(&cpu_);
    link_tables(*model_);
  }
  model_->reload_meta_.cpu_time_ns = cpu_.ns();
  model_->reload_meta_.logical_cores = logical_cores();
  model_->reload_meta_.total_memory = total_memory();
  std::shared_ptr<const DataModel> out(std::move(model_));
  model_ = std::make_unique<DataModel>();
  return out;
}

}  // namespace assoc
