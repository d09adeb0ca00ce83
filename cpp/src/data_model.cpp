#include "assoc/data_model.hpp"

#include <algorithm>

#include "assoc/error.hpp"

namespace assoc {

int Table::column_of(std::uint32_t field) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].field == field) return static_cast<int>(i);
  return -1;
}

std::size_t Table::byte_size() const {
  std::size_t n = 0;
  for (const auto& c : columns) n += c.index.byte_size();
  return n;
}

bool is_derived_tag(std::string_view tag) {
  for (const std::string_view derived : {"$system", "$hidden", "$key", "$keypart", "$syn", "$numeric", "$integer",
                                         "$ascii", "$text", "$timestamp", "$date"})
    if (tag == derived) return true;
  return false;
}

std::vector<std::string> Field::tags() const {
  std::vector<std::string> t;
  if (is_system) t.emplace_back("$system");
  if (is_hidden) t.emplace_back("$hidden");
  if (is_key) t.emplace_back("$key");
  if (is_keypart) t.emplace_back("$keypart");
  if (is_syn) t.emplace_back("$syn");
  const SymbolTable& s = symbols;
  if (s.all_numeric()) {
    t.emplace_back("$numeric");
    if (s.all_integer()) t.emplace_back("$integer");
  } else if (!s.empty()) {
    if (s.all_ascii()) t.emplace_back("$ascii");
    if (!s.any_numeric()) t.emplace_back("$text");
  }
  auto has_source_tag = [&](const char* tag) {
    for (const auto& st : source_tags)
      if (st == tag) return true;
    return false;
  };
  const bool is_date = format.type == "DATE" || has_source_tag("$date");
  const bool is_timestamp = is_date || format.type == "TIMESTAMP" || has_source_tag("$timestamp");
  if (!s.empty() && s.any_numeric()) {
    if (is_timestamp) t.emplace_back("$timestamp");
    if (is_date) t.emplace_back("$date");
  }
  // The source's other tags (a QVD's user tags) follow; the ones derived above are the
  // model's to give, whatever the source said.
  for (const auto& st : source_tags)
    if (!is_derived_tag(st) && std::find(t.begin(), t.end(), st) == t.end()) t.push_back(st);
  return t;
}

int DataModel::find_field(const std::string& name) const {
  auto it = field_ids_.find(name);
  return it == field_ids_.end() ? -1 : static_cast<int>(it->second);
}

int DataModel::find_table(const std::string& name) const {
  auto it = table_ids_.find(name);
  return it == table_ids_.end() ? -1 : static_cast<int>(it->second);
}

const Table& DataModel::table(const std::string& name) const {
  const int t = find_table(name);
  if (t < 0) throw Error("no table named '" + name + "'");
  return tables_[static_cast<std::size_t>(t)];
}

const Field& DataModel::field(const std::string& name) const {
  const int f = find_field(name);
  if (f < 0) throw Error("no field named '" + name + "'");
  return fields_[static_cast<std::size_t>(f)];
}

const Column& DataModel::column(const std::string& table, const std::string& field) const {
  const Table& t = this->table(table);
  const int f = find_field(field);
  const int c = f < 0 ? -1 : t.column_of(static_cast<std::uint32_t>(f));
  if (c < 0) throw Error("table '" + table + "' has no field '" + field + "'");
  return t.columns[static_cast<std::size_t>(c)];
}

std::vector<std::string> DataModel::data_table_names() const {
  std::vector<std::string> out;
  for (const auto& t : tables_)
    if (!t.is_system) out.push_back(t.name);
  return out;
}

std::vector<std::string> DataModel::field_names(const Table& table) const {
  std::vector<std::string> out;
  out.reserve(table.columns.size());
  for (const auto& c : table.columns) out.push_back(fields_[c.field].name);
  return out;
}

std::vector<std::string> DataModel::source_field_names(const Table& table) const {
  std::vector<std::string> out;
  out.reserve(table.loaded_fields.size());
  for (const auto f : table.loaded_fields) out.push_back(fields_[f].name);
  return out;
}

std::vector<std::uint32_t> DataModel::source_codes(const std::string& table, const std::string& field) const {
  const Table& t = this->table(table);
  const int f = find_field(field);
  std::vector<std::uint32_t> out(t.rows);
  if (f < 0 || !read_source(t, static_cast<std::uint32_t>(f), out.data(), 0))
    throw Error("table '" + table + "' has no field '" + field + "'");
  return out;
}

bool DataModel::read_source(const Table& t, std::uint32_t field, std::uint32_t* out, std::size_t depth) const {
  if (const int c = t.column_of(field); c >= 0) {
    t.columns[static_cast<std::size_t>(c)].index.decode(0, t.rows, out);
    return true;
  }
  if (depth > tables_.size()) return false;  // key tables do not lead back to a table; a guard all the same
  for (const Column& col : t.columns) {
    const Field& key = fields_[col.field];
    if (!key.is_syn) continue;
    const int k = find_table(key.name + " Table");
    if (k < 0 || &tables_[static_cast<std::size_t>(k)] == &t) continue;
    const Table& key_table = tables_[static_cast<std::size_t>(k)];
    // Key value i is row i of its key table.
    std::vector<std::uint32_t> parts(key_table.rows);
    if (!read_source(key_table, field, parts.data(), depth + 1)) continue;
    col.index.decode(0, t.rows, out);
    for (std::size_t r = 0; r < t.rows; ++r) out[r] = out[r] == kNull ? kNull : parts[out[r]];
    return true;
  }
  return false;
}

std::size_t DataModel::static_byte_size() const {
  std::size_t n = 0;
  for (const auto& f : fields_) n += f.symbols.byte_size() + f.name.capacity() + sizeof(Field);
  for (const auto& t : tables_) n += t.byte_size() + t.name.capacity() + sizeof(Table) + t.columns.capacity() * sizeof(Column);
  return n;
}

}  // namespace assoc
