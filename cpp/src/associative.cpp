#include "assoc/associative.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "assoc/error.hpp"

namespace assoc {
namespace {

using FieldSet = std::vector<std::uint32_t>;  // sorted field ids

FieldSet field_set(const Table& t) {
  FieldSet s;
  s.reserve(t.columns.size());
  for (const auto& c : t.columns) s.push_back(c.field);
  std::sort(s.begin(), s.end());
  return s;
}

FieldSet intersection(const FieldSet& a, const FieldSet& b) {
  FieldSet out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// Open-addressing map from 64-bit keys to dense ids given in first-seen order.
class DenseIds {
 public:
  explicit DenseIds(std::size_t expected) {
    std::size_t cap = 16;
    while (cap < expected * 2) cap <<= 1;
    keys_.assign(cap, 0);
    ids_.assign(cap, kEmpty);
  }
  std::uint32_t size() const { return size_; }
  // The dense id of `key`, a new one when unseen.
  std::uint32_t id(std::uint64_t key) {
    std::size_t s = hash(key) & (keys_.size() - 1);
    while (ids_[s] != kEmpty) {
      if (keys_[s] == key) return ids_[s];
      s = (s + 1) & (keys_.size() - 1);
    }
    if (size_ == kEmpty - 1) throw Error("too many combinations in one synthetic key");
    keys_[s] = key;
    ids_[s] = size_;
    if (++size_ * 2 > keys_.size()) grow();
    return size_ - 1;
  }

 private:
  static constexpr std::uint32_t kEmpty = 0xFFFFFFFFU;
  static std::uint64_t hash(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
  }
  void grow() {
    std::vector<std::uint64_t> keys(keys_.size() * 2, 0);
    std::vector<std::uint32_t> ids(keys_.size() * 2, kEmpty);
    for (std::size_t i = 0; i < keys_.size(); ++i) {
      if (ids_[i] == kEmpty) continue;
      std::size_t s = hash(keys_[i]) & (keys.size() - 1);
      while (ids[s] != kEmpty) s = (s + 1) & (keys.size() - 1);
      keys[s] = keys_[i];
      ids[s] = ids_[i];
    }
    keys_.swap(keys);
    ids_.swap(ids);
  }
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> ids_;
  std::uint32_t size_ = 0;
};

std::string unused_syn_number(const DataModel& model, int& n) {
  for (;; ++n) {
    const std::string field = "$Syn " + std::to_string(n);
    if (model.find_field(field) < 0 && model.find_table(field + " Table") < 0) return field;
  }
}

// Moves the shared fields `shared` out of every table in `group` into a new synthetic key
// table, as the header describes.
void add_synthetic_key(DataModel& model, const FieldSet& shared, const std::vector<std::uint32_t>& group,
                       int& syn_number) {
  auto& fields = ModelAccess::fields(model);
  auto& tables = ModelAccess::tables(model);
  const std::string syn_name = unused_syn_number(model, syn_number);
  ++syn_number;

  // Each row's combination becomes a dense id, one part at a time: the id of the parts so far
  // and the next part's code (0 = NULL, symbol + 1 otherwise) give the id of the longer prefix.
  std::size_t total_rows = 0;
  for (auto t : group) total_rows += tables[t].rows;
  if (total_rows >= 0xFFFFFFFFULL) throw Error("tables too large for a synthetic key");
  std::vector<std::vector<std::uint32_t>> combo_of_row(group.size());
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> prefix_parts(shared.size());
  std::vector<DenseIds> levels;
  for (std::size_t k = 1; k < shared.size(); ++k) levels.emplace_back(std::min<std::size_t>(total_rows, 1 << 20));
  std::vector<std::uint32_t> codes;
  for (std::size_t g = 0; g < group.size(); ++g) {
    const Table& t = tables[group[g]];
    auto& ids = combo_of_row[g];
    ids.resize(t.rows);
    codes.resize(t.rows);
    for (std::size_t k = 0; k < shared.size(); ++k) {
      const Column& col = t.columns[static_cast<std::size_t>(t.column_of(shared[k]))];
      col.index.decode(0, t.rows, codes.data());
      if (k == 0) {
        for (std::size_t r = 0; r < t.rows; ++r) ids[r] = codes[r] + 1;  // kNull + 1 wraps to 0
        continue;
      }
      const std::uint64_t radix = std::uint64_t{fields[shared[k]].symbols.size()} + 1;
      DenseIds& level = levels[k - 1];
      auto& parts = prefix_parts[k];
      for (std::size_t r = 0; r < t.rows; ++r) {
        const std::uint32_t code = codes[r] + 1;
        const std::uint32_t before = level.size();
        const std::uint32_t id = level.id(ids[r] * radix + code);
        if (id == before) parts.emplace_back(ids[r], code);
        ids[r] = id;
      }
    }
  }

  // Unrolls a combination id into its parts' codes.
  auto parts_of = [&](std::uint32_t id, std::vector<std::uint32_t>& out) {
    out.resize(shared.size());
    for (std::size_t k = shared.size(); k-- > 1;) {
      out[k] = prefix_parts[k][id].second;
      id = prefix_parts[k][id].first;
    }
    out[0] = id;
  };

  // Synthetic key values in first-occurrence order; the all-NULL combination stays NULL.
  std::vector<std::uint32_t> syn_of_combo(levels.back().size(), kNull);
  std::vector<std::uint32_t> combo_of_syn;
  std::vector<std::uint32_t> parts;
  for (const auto& ids : combo_of_row) {
    for (const std::uint32_t c : ids) {
      if (syn_of_combo[c] != kNull) continue;
      parts_of(c, parts);
      if (std::all_of(parts.begin(), parts.end(), [](std::uint32_t p) { return p == 0; })) continue;
      syn_of_combo[c] = static_cast<std::uint32_t>(combo_of_syn.size());
      combo_of_syn.push_back(c);
    }
  }
  const auto n_syn = static_cast<std::uint32_t>(combo_of_syn.size());

  Field syn_field;
  syn_field.name = syn_name;
  syn_field.is_syn = true;
  {
    SymbolTableBuilder symbols;
    symbols.reserve(n_syn);
    for (std::uint32_t i = 0; i < n_syn; ++i) symbols.append(DualView::of_number(static_cast<double>(i) + 1));
    syn_field.symbols = symbols.finish();
  }
  const auto syn_field_id = static_cast<std::uint32_t>(fields.size());
  fields.push_back(std::move(syn_field));
  ModelAccess::field_ids(model).emplace(syn_name, syn_field_id);

  // The original tables keep the synthetic key in place of the shared fields.
  std::vector<std::uint32_t> rows;
  for (std::size_t g = 0; g < group.size(); ++g) {
    Table& t = tables[group[g]];
    rows.resize(t.rows);
    for (std::size_t r = 0; r < t.rows; ++r) rows[r] = syn_of_combo[combo_of_row[g][r]];
    std::vector<Column> columns;
    bool placed = false;
    for (auto& c : t.columns) {
      if (!std::binary_search(shared.begin(), shared.end(), c.field)) {
        columns.push_back(std::move(c));
      } else if (!placed) {
        Column syn;
        syn.field = syn_field_id;
        syn.index = PackedIndex::pack(rows.data(), rows.size(), n_syn);
        columns.push_back(std::move(syn));
        placed = true;
      }
    }
    t.columns = std::move(columns);
    std::vector<std::uint32_t>().swap(combo_of_row[g]);
  }

  // The synthetic key table: the key first, then the parts in field order.
  Table syn_table;
  syn_table.name = syn_name + " Table";
  syn_table.rows = n_syn;
  syn_table.is_synthetic = true;
  rows.resize(n_syn);
  std::iota(rows.begin(), rows.end(), 0U);
  Column key;
  key.field = syn_field_id;
  key.index = PackedIndex::pack(rows.data(), n_syn, n_syn);
  syn_table.columns.push_back(std::move(key));
  std::vector<std::vector<std::uint32_t>> part_rows(shared.size(), std::vector<std::uint32_t>(n_syn));
  for (std::uint32_t i = 0; i < n_syn; ++i) {
    parts_of(combo_of_syn[i], parts);
    for (std::size_t k = 0; k < shared.size(); ++k) part_rows[k][i] = parts[k] - 1;  // code 0 is NULL
  }
  for (std::size_t k = 0; k < shared.size(); ++k) {
    Column c;
    c.field = shared[k];
    c.index = PackedIndex::pack(part_rows[k].data(), n_syn, fields[shared[k]].symbols.size());
    syn_table.columns.push_back(std::move(c));
    fields[shared[k]].is_keypart = true;
  }
  for (const Column& c : syn_table.columns) syn_table.loaded_fields.push_back(c.field);
  ModelAccess::table_ids(model).emplace(syn_table.name, static_cast<std::uint32_t>(tables.size()));
  tables.push_back(std::move(syn_table));
}

void make_synthetic_keys(DataModel& model) {
  auto& tables = ModelAccess::tables(model);
  int syn_number = 1;
  // Each pass shrinks some pairwise shared set and none grows, so passes are few; the bound
  // only guards against a mistake turning into a hang.
  for (std::size_t pass = 0; pass < 100000; ++pass) {
    std::vector<FieldSet> sets;
    for (const auto& t : tables) sets.push_back(field_set(t));
    FieldSet best;
    for (std::size_t i = 0; i < tables.size(); ++i) {
      for (std::size_t j = i + 1; j < tables.size(); ++j) {
        FieldSet shared = intersection(sets[i], sets[j]);
        if (shared.size() >= 2 && shared.size() > best.size()) best = std::move(shared);
      }
    }
    if (best.empty()) return;
    std::vector<std::uint32_t> group;
    for (std::size_t i = 0; i < tables.size(); ++i)
      if (std::includes(sets[i].begin(), sets[i].end(), best.begin(), best.end()))
        group.push_back(static_cast<std::uint32_t>(i));
    add_synthetic_key(model, best, group, syn_number);
  }
  throw Error("internal: synthetic keys did not settle");
}

// Union-find over table and field nodes.
struct Components {
  explicit Components(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), std::size_t{0}); }
  std::size_t find(std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(std::size_t a, std::size_t b) { parent[find(a)] = find(b); }
  std::vector<std::size_t> parent;
};

void mark_loose_tables(DataModel& model) {
  auto& tables = ModelAccess::tables(model);
  const auto& fields = model.fields();
  const std::size_t n_tables = tables.size();
  for (;;) {
    // Links: fields held by two or more tables that are not loose.
    std::vector<int> holders(fields.size(), 0);
    for (const auto& t : tables)
      if (!t.is_loose && !t.is_system)
        for (const auto& c : t.columns) ++holders[c.field];
    // A table lies on a cycle when two of its links stay connected without it.
    std::int64_t pick = -1;
    for (std::size_t t = 0; t < n_tables; ++t) {
      const Table& table = tables[t];
      if (table.is_loose || table.is_system) continue;
      std::vector<std::uint32_t> links;
      for (const auto& c : table.columns)
        if (holders[c.field] >= 2) links.push_back(c.field);
      if (links.size() < 2) continue;
      Components comp(n_tables + fields.size());
      for (std::size_t u = 0; u < n_tables; ++u) {
        if (u == t || tables[u].is_loose || tables[u].is_system) continue;
        for (const auto& c : tables[u].columns)
          if (holders[c.field] >= 2) comp.join(u, n_tables + c.field);
      }
      bool on_cycle = false;
      for (std::size_t a = 0; a < links.size() && !on_cycle; ++a)
        for (std::size_t b = a + 1; b < links.size() && !on_cycle; ++b)
          on_cycle = comp.find(n_tables + links[a]) == comp.find(n_tables + links[b]);
      if (on_cycle && (pick < 0 || table.rows > tables[static_cast<std::size_t>(pick)].rows))
        pick = static_cast<std::int64_t>(t);
    }
    if (pick < 0) return;
    tables[static_cast<std::size_t>(pick)].is_loose = true;
  }
}

// Packs one system column from its symbols' indexes.
Column system_column(std::uint32_t field, const std::vector<std::uint32_t>& rows, std::uint32_t n_symbols) {
  Column c;
  c.field = field;
  c.index = PackedIndex::pack(rows.data(), rows.size(), n_symbols);
  return c;
}

void add_system_tables(DataModel& model) {
  static const char* const kNames[] = {"$Table", "$Field", "$Fields", "$FieldNo", "$Rows"};
  // A data field that already has a system field's name keeps it; the app then has no system tables.
  for (const char* name : kNames)
    if (model.find_field(name) >= 0) return;
  if (model.find_table("$$SysTable 1") >= 0 || model.find_table("$$SysTable 2") >= 0) return;
  auto& fields = ModelAccess::fields(model);
  auto& tables = ModelAccess::tables(model);
  const std::size_t n_data = tables.size();

  SymbolTableBuilder table_names, field_names, n_fields, field_nos, n_rows;
  std::vector<std::uint32_t> t1_table, t1_field, t1_field_no, t2_table, t2_rows, t2_fields;
  for (std::size_t t = 0; t < n_data; ++t) {
    const Table& table = tables[t];
    const std::uint32_t name = table_names.intern_text(table.name);
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      t1_table.push_back(name);
      t1_field.push_back(field_names.intern_text(fields[table.columns[c].field].name));
      t1_field_no.push_back(field_nos.intern_number(static_cast<double>(c + 1)));
    }
    t2_table.push_back(name);
    t2_rows.push_back(n_rows.intern_number(static_cast<double>(table.rows)));
    t2_fields.push_back(n_fields.intern_number(static_cast<double>(table.columns.size())));
  }
  SymbolTableBuilder* builders[] = {&table_names, &field_names, &n_fields, &field_nos, &n_rows};
  std::uint32_t ids[5];
  for (int i = 0; i < 5; ++i) {
    Field f;
    f.name = kNames[i];
    f.symbols = builders[i]->finish();
    f.is_system = true;
    f.is_hidden = true;
    ids[i] = static_cast<std::uint32_t>(fields.size());
    ModelAccess::field_ids(model).emplace(f.name, ids[i]);
    fields.push_back(std::move(f));
  }
  auto symbols = [&](int i) { return fields[ids[i]].symbols.size(); };

  Table pairs;
  pairs.name = "$$SysTable 1";
  pairs.rows = t1_table.size();
  pairs.is_system = true;
  pairs.columns.push_back(system_column(ids[0], t1_table, symbols(0)));
  pairs.columns.push_back(system_column(ids[1], t1_field, symbols(1)));
  pairs.columns.push_back(system_column(ids[3], t1_field_no, symbols(3)));
  Table per_table;
  per_table.name = "$$SysTable 2";
  per_table.rows = t2_table.size();
  per_table.is_system = true;
  per_table.columns.push_back(system_column(ids[0], t2_table, symbols(0)));
  per_table.columns.push_back(system_column(ids[4], t2_rows, symbols(4)));
  per_table.columns.push_back(system_column(ids[2], t2_fields, symbols(2)));
  for (Table* t : {&pairs, &per_table}) {
    for (const Column& c : t->columns) t->loaded_fields.push_back(c.field);
    ModelAccess::table_ids(model).emplace(t->name, static_cast<std::uint32_t>(tables.size()));
    tables.push_back(std::move(*t));
  }
}

}  // namespace

void link_tables(DataModel& model) {
  make_synthetic_keys(model);
  add_system_tables(model);

  auto& fields = ModelAccess::fields(model);
  const auto& tables = model.tables();
  for (auto& f : fields) {
    f.src_tables.clear();
    f.total_count = 0;
  }
  std::vector<int> data_holders(fields.size(), 0);
  for (std::uint32_t t = 0; t < tables.size(); ++t) {
    for (const auto& c : tables[t].columns) {
      Field& f = fields[c.field];
      f.src_tables.push_back(t);
      f.total_count = std::max<std::uint64_t>(f.total_count, c.index.non_null_count());
      if (!tables[t].is_system) ++data_holders[c.field];
    }
  }
  for (std::size_t i = 0; i < fields.size(); ++i) fields[i].is_key = data_holders[i] >= 2;
  mark_loose_tables(model);
}

}  // namespace assoc
