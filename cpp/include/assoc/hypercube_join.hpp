#pragma once
// The joins behind a hypercube: the link forest as a graph of table and key-field nodes,
// the part of it that links a measure's node to the dimensions, and, per record of that node,
// the dimension tuples it reaches. A tuple is one 64-bit key: each dimension d adds
// (symbol + 1) * stride_d, so None adds 0 and partial tuples from disjoint subtrees add up.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "assoc/selection.hpp"

namespace assoc::detail {

inline constexpr std::uint32_t kNoNode = 0xFFFFFFFFU;
// A record's column at a key-field node: the record is the field's symbol itself.
inline constexpr std::uint32_t kIdentity = 0xFFFFFFFFU;
inline constexpr std::uint64_t kMissing = ~std::uint64_t{0};

// Tables (nodes 0..T-1) and key fields (T + field) linked as the associative model links
// them: a field held by two or more tables that are not loose is a node between them.
class LinkGraph {
 public:
  explicit LinkGraph(const AssociativeModel& model);
  std::uint32_t n_tables() const { return n_tables_; }
  bool is_field(std::uint32_t node) const { return node >= n_tables_; }
  std::uint32_t field_of(std::uint32_t node) const { return node - n_tables_; }
  // Where a field's values live: its key-field node, else the one table that holds it.
  std::uint32_t node_of_field(std::uint32_t field) const;
  const std::vector<std::uint32_t>& neighbours(std::uint32_t node) const { return adj_[node]; }
  std::size_t size() const { return adj_.size(); }

 private:
  const AssociativeModel& model_;
  std::uint32_t n_tables_;
  std::vector<std::vector<std::uint32_t>> adj_;
};

// The smallest part of the forest that holds a root and the targets it reaches, rooted there.
struct RootedTree {
  RootedTree(const LinkGraph& graph, std::uint32_t root, const std::vector<std::uint32_t>& targets);
  std::uint32_t root;
  std::vector<std::uint32_t> parent;             // per node, kNoNode outside the tree
  std::vector<std::vector<std::uint32_t>> children;
  std::vector<std::uint8_t> reached;             // per node: reachable from the root at all
  bool contains(std::uint32_t node) const { return node == root || parent[node] != kNoNode; }
};

// Where one dimension's value comes from, and its weight in a tuple key.
struct DimPlace {
  std::uint32_t field = 0;
  std::uint32_t node = 0;
  std::uint32_t column = kIdentity;  // the field's column in a table node
  std::uint64_t stride = 0;
};

// Per value of a link field (index symbol + 1; 0 for NULL): the partial tuple keys its side
// reaches. Functional when each value reaches at most one.
struct KeySets {
  bool functional = true;
  std::vector<std::uint64_t> one;        // functional: the key, kMissing when none
  std::vector<std::uint32_t> offsets;    // otherwise: keys[offsets[i], offsets[i+1])
  std::vector<std::uint64_t> keys;
  std::span<const std::uint64_t> of(std::uint32_t index) const {
    if (functional) return one[index] == kMissing ? std::span<const std::uint64_t>() : std::span(&one[index], 1);
    return std::span(keys.data() + offsets[index], offsets[index + 1] - offsets[index]);
  }
};

// A batch of records of a root node: per extra column each record's symbol (kNull for NULL),
// and the tuple keys each record reaches (keys[key_offsets[i], key_offsets[i+1])).
struct RecordBatch {
  std::size_t n = 0;
  std::vector<std::vector<std::uint32_t>> extra;
  std::vector<std::uint32_t> key_offsets;
  std::vector<std::uint64_t> keys;
};

// The records of a tree's root that are possible under a state, and the tuples they reach:
// by left outer joins (a side with no partner adds None), or by inner joins (such a record
// reaches nothing).
class JoinWalker {
 public:
  JoinWalker(const AssociativeModel& model, const RowStates& rows, const LinkGraph& graph, const RootedTree& tree,
             const std::vector<DimPlace>& dims, bool inner);
  ~JoinWalker();

  // A link of the root towards the dimensions: the root's column holding the link field
  // (kIdentity at a field node) and the tuples each of its values reaches.
  struct Link {
    std::uint32_t column;
    const KeySets* sets;
  };
  std::vector<Link> root_links();
  // The dimensions the root holds itself.
  std::vector<const DimPlace*> root_dims() const;
  bool inner() const { return inner_; }
  const RootedTree& tree() const { return tree_; }
  const LinkGraph& graph() const { return graph_; }

  // Calls fn on batches of the root's possible records, with each record's symbols in
  // `extra_columns` (columns of the root table, or kIdentity).
  void for_each_record(const std::vector<std::uint32_t>& extra_columns,
                       const std::function<void(const RecordBatch&)>& fn);
  // The symbols of a field node's field that occur on possible rows of its tables.
  Bitset possible_values(std::uint32_t field) const;

 private:
  const KeySets& sets_of(std::uint32_t node);
  void table_records(std::uint32_t table, const std::vector<std::uint32_t>& extra_columns,
                     const std::function<void(const RecordBatch&)>& fn);
  void field_records(std::uint32_t node, const Bitset* values, const std::vector<std::uint32_t>& extra_columns,
                     const std::function<void(const RecordBatch&)>& fn);
  KeySets table_sets(std::uint32_t table);
  KeySets field_sets(std::uint32_t node);

  const AssociativeModel& model_;
  const RowStates& rows_;
  const LinkGraph& graph_;
  const RootedTree& tree_;
  const std::vector<DimPlace>& dims_;
  bool inner_;
  std::vector<std::unique_ptr<KeySets>> sets_;  // per node, computed once
};

}  // namespace assoc::detail
