#include <algorithm>
#include <deque>

#include "assoc/error.hpp"
#include "assoc/hypercube_join.hpp"

namespace assoc::detail {
namespace {

constexpr std::size_t kBatch = 1024;  // records gathered per call of a batch consumer

// Collects (index, key) pairs into KeySets: directly into one key per index while no index
// has two, as a sorted list of pairs from the first index that has.
class KeySetsBuilder {
 public:
  explicit KeySetsBuilder(std::size_t n_index) { sets_.one.assign(n_index, kMissing); }
  void add(std::uint32_t index, std::uint64_t key) {
    if (sets_.functional) {
      std::uint64_t& slot = sets_.one[index];
      if (slot == kMissing || slot == key) {
        slot = key;
        return;
      }
      sets_.functional = false;
      for (std::size_t i = 0; i < sets_.one.size(); ++i)
        if (sets_.one[i] != kMissing) pairs_.emplace_back(static_cast<std::uint32_t>(i), sets_.one[i]);
    }
    pairs_.emplace_back(index, key);
  }
  KeySets finish() {
    if (sets_.functional) return std::move(sets_);
    const std::size_t n_index = sets_.one.size();
    std::vector<std::uint64_t>().swap(sets_.one);
    std::sort(pairs_.begin(), pairs_.end());
    pairs_.erase(std::unique(pairs_.begin(), pairs_.end()), pairs_.end());
    sets_.offsets.assign(n_index + 1, 0);
    sets_.keys.reserve(pairs_.size());
    for (const auto& [index, key] : pairs_) {
      ++sets_.offsets[index + 1];
      sets_.keys.push_back(key);
    }
    for (std::size_t i = 0; i < n_index; ++i) sets_.offsets[i + 1] += sets_.offsets[i];
    return std::move(sets_);
  }

 private:
  KeySets sets_;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> pairs_;
};

// Appends one record's keys to batch.keys: `own` plus one key from each link's set. A link
// with no key adds None (outer) or drops the record (inner, then false).
bool add_record_keys(std::uint64_t own, const std::vector<std::span<const std::uint64_t>>& link_sets, bool inner,
                     RecordBatch& batch) {
  auto& keys = batch.keys;
  const std::size_t start = keys.size();
  keys.push_back(own);
  for (const auto& set : link_sets) {
    if (set.empty()) {
      if (inner) {
        keys.resize(start);
        return false;
      }
      continue;
    }
    const std::size_t end = keys.size();
    if (set.size() == 1) {
      for (std::size_t i = start; i < end; ++i) keys[i] += set[0];
      continue;
    }
    const std::vector<std::uint64_t> before(keys.begin() + static_cast<std::ptrdiff_t>(start), keys.end());
    keys.resize(start);
    for (const std::uint64_t k : before)
      for (const std::uint64_t x : set) keys.push_back(k + x);
  }
  batch.key_offsets.push_back(static_cast<std::uint32_t>(keys.size()));
  return true;
}

void start_batch(RecordBatch& batch, std::size_t n_extra) {
  batch.n = 0;
  batch.extra.resize(n_extra);
  for (auto& e : batch.extra) e.clear();
  batch.key_offsets.assign(1, 0);
  batch.keys.clear();
}

}  // namespace

LinkGraph::LinkGraph(const AssociativeModel& model)
    : model_(model), n_tables_(static_cast<std::uint32_t>(model.data().tables().size())) {
  const auto n_fields = static_cast<std::uint32_t>(model.data().fields().size());
  adj_.resize(std::size_t{n_tables_} + n_fields);
  for (std::uint32_t f = 0; f < n_fields; ++f) {
    const auto& holders = model.linked_holders(f);
    if (holders.size() < 2) continue;
    for (const auto& h : holders) {
      adj_[h.table].push_back(n_tables_ + f);
      adj_[n_tables_ + f].push_back(h.table);
    }
  }
}

std::uint32_t LinkGraph::node_of_field(std::uint32_t field) const {
  const auto& linked = model_.linked_holders(field);
  if (linked.size() >= 2) return n_tables_ + field;
  if (linked.size() == 1) return linked[0].table;
  const auto& all = model_.all_holders(field);
  if (all.empty()) throw Error("internal: a field without a table");
  return all[0].table;
}

RootedTree::RootedTree(const LinkGraph& graph, std::uint32_t root_node, const std::vector<std::uint32_t>& targets)
    : root(root_node), parent(graph.size(), kNoNode), children(graph.size()), reached(graph.size(), 0) {
  std::vector<std::uint32_t> bfs_parent(graph.size(), kNoNode);
  std::deque<std::uint32_t> queue{root};
  reached[root] = 1;
  while (!queue.empty()) {
    const std::uint32_t n = queue.front();
    queue.pop_front();
    for (const std::uint32_t m : graph.neighbours(n)) {
      if (reached[m]) continue;
      reached[m] = 1;
      bfs_parent[m] = n;
      queue.push_back(m);
    }
  }
  for (const std::uint32_t t : targets) {
    if (!reached[t]) continue;
    for (std::uint32_t n = t; n != root && parent[n] == kNoNode; n = bfs_parent[n]) {
      parent[n] = bfs_parent[n];
      children[bfs_parent[n]].push_back(n);
    }
  }
}

JoinWalker::JoinWalker(const AssociativeModel& model, const RowStates& rows, const LinkGraph& graph,
                       const RootedTree& tree, const std::vector<DimPlace>& dims, bool inner)
    : model_(model), rows_(rows), graph_(graph), tree_(tree), dims_(dims), inner_(inner), sets_(graph.size()) {}

JoinWalker::~JoinWalker() = default;

std::vector<JoinWalker::Link> JoinWalker::root_links() {
  std::vector<Link> out;
  const std::uint32_t root = tree_.root;
  for (const std::uint32_t child : tree_.children[root]) {
    std::uint32_t column = kIdentity;
    if (!graph_.is_field(root))
      column = static_cast<std::uint32_t>(model_.data().tables()[root].column_of(graph_.field_of(child)));
    out.push_back(Link{column, &sets_of(child)});
  }
  return out;
}

std::vector<const DimPlace*> JoinWalker::root_dims() const {
  std::vector<const DimPlace*> out;
  for (const auto& d : dims_)
    if (d.node == tree_.root) out.push_back(&d);
  return out;
}

const KeySets& JoinWalker::sets_of(std::uint32_t node) {
  if (!sets_[node]) sets_[node] = std::make_unique<KeySets>(graph_.is_field(node) ? field_sets(node) : table_sets(node));
  return *sets_[node];
}

KeySets JoinWalker::table_sets(std::uint32_t table) {
  const Table& t = model_.data().tables()[table];
  const std::uint32_t link = graph_.field_of(tree_.parent[table]);
  const auto column = static_cast<std::uint32_t>(t.column_of(link));
  KeySetsBuilder b(std::size_t{model_.data().fields()[link].symbols.size()} + 1);
  std::vector<const KeySets*> children;
  for (const std::uint32_t child : tree_.children[table]) children.push_back(&sets_of(child));
  if (std::all_of(children.begin(), children.end(), [](const KeySets* k) { return k->functional; })) {
    // Each row reaches at most one tuple: its key is a sum of look-ups, batch by batch.
    std::vector<std::uint32_t> columns{column};
    std::vector<std::uint64_t> strides{0};
    for (const auto& d : dims_) {
      if (d.node != table) continue;
      columns.push_back(d.column);
      strides.push_back(d.stride);
    }
    const std::size_t n_own = columns.size();
    for (const std::uint32_t child : tree_.children[table])
      columns.push_back(static_cast<std::uint32_t>(t.column_of(graph_.field_of(child))));
    std::vector<std::vector<std::uint32_t>> codes(columns.size(), std::vector<std::uint32_t>(kBatch));
    std::vector<std::uint64_t> key(kBatch);
    std::vector<std::uint8_t> dropped(kBatch);
    const Bitset* possible = rows_.rows[table].get();
    for (std::size_t begin = 0; begin < t.rows; begin += kBatch) {
      const std::size_t count = std::min(kBatch, t.rows - begin);
      for (std::size_t c = 0; c < columns.size(); ++c) t.columns[columns[c]].index.decode(begin, count, codes[c].data());
      std::fill(key.begin(), key.end(), 0);
      std::fill(dropped.begin(), dropped.end(), 0);
      for (std::size_t c = 1; c < n_own; ++c)
        for (std::size_t i = 0; i < count; ++i) key[i] += std::uint64_t{static_cast<std::uint32_t>(codes[c][i] + 1)} * strides[c];
      for (std::size_t l = 0; l < children.size(); ++l) {
        const std::uint64_t* one = children[l]->one.data();
        const std::uint32_t* cs = codes[n_own + l].data();
        for (std::size_t i = 0; i < count; ++i) {
          const std::uint64_t v = one[static_cast<std::uint32_t>(cs[i] + 1)];
          if (v == kMissing) {
            dropped[i] = inner_ ? 1 : 0;
          } else {
            key[i] += v;
          }
        }
      }
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t code = codes[0][i];
        if (code == kNull || dropped[i] || (possible != nullptr && !possible->test(begin + i))) continue;
        b.add(code + 1, key[i]);
      }
    }
    return b.finish();
  }
  table_records(table, {column}, [&](const RecordBatch& batch) {
    for (std::size_t i = 0; i < batch.n; ++i) {
      const std::uint32_t code = batch.extra[0][i];
      if (code == kNull) continue;
      for (std::uint32_t k = batch.key_offsets[i]; k < batch.key_offsets[i + 1]; ++k) b.add(code + 1, batch.keys[k]);
    }
  });
  return b.finish();
}

KeySets JoinWalker::field_sets(std::uint32_t node) {
  const std::uint32_t field = graph_.field_of(node);
  const std::uint32_t n = model_.data().fields()[field].symbols.size();
  std::vector<const KeySets*> children;
  for (const std::uint32_t child : tree_.children[node]) children.push_back(&sets_of(child));
  if (std::all_of(children.begin(), children.end(), [](const KeySets* k) { return k->functional; })) {
    // One key per value: written in place, child by child.
    std::uint64_t own_stride = 0;
    for (const auto& d : dims_)
      if (d.node == node) own_stride += d.stride;
    KeySets out;
    out.one.resize(std::size_t{n} + 1);
    // A NULL link value joins nothing beyond; where nothing lies beyond, it is simply None.
    out.one[0] = children.empty() ? 0 : kMissing;
    for (std::uint32_t s = 0; s < n; ++s) out.one[s + 1] = std::uint64_t{s + 1} * own_stride;
    for (const KeySets* c : children) {
      const std::uint64_t* v = c->one.data();
      std::uint64_t* key = out.one.data();
      for (std::size_t i = 1; i <= n; ++i) {
        // A value its side misses adds None (outer), or reaches nothing (inner).
        const std::uint64_t add = v[i] == kMissing ? (inner_ ? kMissing : 0) : v[i];
        key[i] = key[i] == kMissing || add == kMissing ? kMissing : key[i] + add;
      }
    }
    return out;
  }
  KeySetsBuilder b(std::size_t{n} + 1);
  field_records(node, nullptr, {kIdentity}, [&](const RecordBatch& batch) {
    for (std::size_t i = 0; i < batch.n; ++i)
      for (std::uint32_t k = batch.key_offsets[i]; k < batch.key_offsets[i + 1]; ++k)
        b.add(batch.extra[0][i] + 1, batch.keys[k]);
  });
  return b.finish();
}

void JoinWalker::for_each_record(const std::vector<std::uint32_t>& extra_columns,
                                 const std::function<void(const RecordBatch&)>& fn) {
  const std::uint32_t root = tree_.root;
  if (graph_.is_field(root)) {
    const Bitset values = possible_values(graph_.field_of(root));
    field_records(root, &values, extra_columns, fn);
  } else {
    table_records(root, extra_columns, fn);
  }
}

void JoinWalker::table_records(std::uint32_t t, const std::vector<std::uint32_t>& extra_columns,
                               const std::function<void(const RecordBatch&)>& fn) {
  const Table& table = model_.data().tables()[t];
  struct Source {
    std::uint32_t column;
    std::vector<std::uint32_t> codes;
  };
  std::vector<Source> sources;  // every column read, once
  auto source_of = [&](std::uint32_t column) {
    for (std::size_t i = 0; i < sources.size(); ++i)
      if (sources[i].column == column) return i;
    sources.push_back(Source{column, std::vector<std::uint32_t>(kBatch)});
    return sources.size() - 1;
  };
  std::vector<std::pair<std::size_t, std::uint64_t>> own;  // source, stride
  for (const auto& d : dims_)
    if (d.node == t) own.emplace_back(source_of(d.column), d.stride);
  std::vector<std::pair<std::size_t, const KeySets*>> links;
  for (const std::uint32_t child : tree_.children[t])
    links.emplace_back(source_of(static_cast<std::uint32_t>(table.column_of(graph_.field_of(child)))),
                       &sets_of(child));
  std::vector<std::size_t> extras;
  for (const std::uint32_t c : extra_columns) extras.push_back(source_of(c));

  const Bitset* possible = rows_.rows[t].get();
  RecordBatch batch;
  std::vector<std::span<const std::uint64_t>> link_sets(links.size());
  for (std::size_t begin = 0; begin < table.rows; begin += kBatch) {
    const std::size_t count = std::min(kBatch, table.rows - begin);
    bool any = possible == nullptr;
    for (std::size_t w = begin / 64; !any && w < (begin + count + 63) / 64; ++w) any = possible->words()[w] != 0;
    if (!any) continue;
    for (auto& s : sources) table.columns[s.column].index.decode(begin, count, s.codes.data());
    start_batch(batch, extras.size());
    for (std::size_t i = 0; i < count; ++i) {
      if (possible != nullptr && !possible->test(begin + i)) continue;
      std::uint64_t key = 0;
      for (const auto& [s, stride] : own) key += std::uint64_t{static_cast<std::uint32_t>(sources[s].codes[i] + 1)} * stride;
      for (std::size_t l = 0; l < links.size(); ++l)
        link_sets[l] = links[l].second->of(static_cast<std::uint32_t>(sources[links[l].first].codes[i] + 1));
      if (!add_record_keys(key, link_sets, inner_, batch)) continue;
      for (std::size_t e = 0; e < extras.size(); ++e) batch.extra[e].push_back(sources[extras[e]].codes[i]);
      ++batch.n;
    }
    if (batch.n > 0) fn(batch);
  }
}

void JoinWalker::field_records(std::uint32_t node, const Bitset* values, const std::vector<std::uint32_t>& extra_columns,
                               const std::function<void(const RecordBatch&)>& fn) {
  const std::uint32_t field = graph_.field_of(node);
  const std::uint32_t n = model_.data().fields()[field].symbols.size();
  std::uint64_t own_stride = 0;
  for (const auto& d : dims_)
    if (d.node == node) own_stride += d.stride;
  std::vector<const KeySets*> links;
  for (const std::uint32_t child : tree_.children[node]) links.push_back(&sets_of(child));
  RecordBatch batch;
  std::vector<std::span<const std::uint64_t>> link_sets(links.size());
  start_batch(batch, extra_columns.size());
  for (std::uint32_t s = 0; s < n; ++s) {
    if (values != nullptr && !values->test(s)) continue;
    for (std::size_t l = 0; l < links.size(); ++l) link_sets[l] = links[l]->of(s + 1);
    if (!add_record_keys(std::uint64_t{s + 1} * own_stride, link_sets, inner_, batch)) continue;
    for (auto& e : batch.extra) e.push_back(s);
    if (++batch.n == kBatch) {
      fn(batch);
      start_batch(batch, extra_columns.size());
    }
  }
  if (batch.n > 0) fn(batch);
}

Bitset JoinWalker::possible_values(std::uint32_t field) const {
  const std::uint32_t n = model_.data().fields()[field].symbols.size();
  Bitset out(std::size_t{n} + 1);
  std::vector<std::uint32_t> codes(kBatch);
  for (const auto& h : model_.linked_holders(field)) {
    const Table& table = model_.data().tables()[h.table];
    const PackedIndex& index = table.columns[h.column].index;
    const Bitset* possible = rows_.rows[h.table].get();
    for (std::size_t begin = 0; begin < table.rows; begin += kBatch) {
      const std::size_t count = std::min(kBatch, table.rows - begin);
      index.decode(begin, count, codes.data());
      for (std::size_t i = 0; i < count; ++i)
        if (possible == nullptr || possible->test(begin + i)) out.set(std::min(codes[i], n));
    }
  }
  out.reset(n);
  return out;
}

}  // namespace assoc::detail
