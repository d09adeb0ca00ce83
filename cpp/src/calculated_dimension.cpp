// Calculated dimensions: each `=expr` dimension computed per record of the one table it reads
// (once per distinct value when it reads one field), Aggr calls through their nested cube, the
// results kept as a derived column of a copy of the model (spec chart-expressions §7).
#include "assoc/calculated_dimension.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <functional>
#include <set>
#include <unordered_map>

#include "assoc/big_blocks.hpp"
#include "assoc/error.hpp"
#include "assoc/state_functions.hpp"
#include "assoc/expression.hpp"
#include "assoc/expression_plan.hpp"
#include "assoc/hypercube.hpp"
#include "assoc/inter_record.hpp"
#include "assoc/result_cache.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {
namespace {

constexpr std::uint32_t kCalculatedCacheKind = 0x43440001U;  // derived models of scalar dimensions
constexpr std::size_t kBatch = 65536;

bool iequals(const std::string& a, const char* b) {
  std::size_t i = 0;
  for (; i < a.size() && b[i]; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  return i == a.size() && !b[i];
}

[[noreturn]] void fail(const std::string& text, std::size_t pos, const std::string& what) {
  const std::string shown = text.size() <= 200 ? text : text.substr(0, 200) + "...";
  throw Error("calculated dimension '" + shown + "': " + what + " at position " + std::to_string(pos));
}

// Where the call starting at `pos` ends: after the parenthesis closing its first one
// (quotes, brackets and comments skipped).
std::size_t call_end(const std::string& s, std::size_t pos) {
  int depth = 0;
  for (std::size_t i = pos; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\'' || c == '"' || c == '`' || c == '[') {
      const char close = c == '[' ? ']' : c;
      for (++i; i < s.size() && s[i] != close; ++i) {
      }
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t e = s.find("*/", i + 2);
      i = e == std::string::npos ? s.size() : e + 1;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')' && --depth == 0) {
      return i + 1;
    }
  }
  return s.size();
}

std::uint32_t intern(SymbolTableBuilder& out, const Value& v) {
  if (v.is_null()) return kNull;
  if (v.has_text && v.has_number()) return out.intern(DualView::of_dual(v.num, v.text));
  if (v.has_text) return out.intern(DualView::of_text(v.text));
  return out.intern(DualView::of_number(v.num));
}

// One Aggr call of a dimension: its dimensions (fields) and its values by their codes.
struct AggrLeaf {
  std::uint32_t node = 0;
  std::vector<std::uint32_t> fields;
  std::vector<std::uint64_t> radix;  // per dimension: its symbols + 1 (NULL is 0)
  std::unordered_map<std::uint64_t, Value> values;
};

// A leaf of the plan: a field (aggr < 0) or an Aggr call.
struct Leaf {
  std::int64_t field = -1;
  std::int64_t aggr = -1;
};

// One calculated dimension, computed: its table and its column.
struct Derived {
  std::uint32_t table = 0;
  SymbolTable symbols;
  PackedIndex index;
  std::string source;
  std::vector<std::uint32_t> source_map;
};

class Calculator {
 public:
  Calculator(const AssociativeModel& model, const SelectionState& state, std::shared_ptr<const RowStates> rows,
             const NamedStates* states, const std::string& state_name, const std::string& text)
      : model_(model), data_(model.data()), state_(state), rows_(std::move(rows)), states_(states),
        state_name_(state_name), text_(text) {}

  Derived run() {
    std::string blanked = text_;
    blanked[0] = ' ';
    try {
      expr_ = parse_expression(blanked);
      expr_.interpretation = &data_.interpretation();
      if (states_ != nullptr) {
        fold_state_functions(expr_, model_, *states_, state_name_);
      } else {
        fold_state_functions(expr_, model_, NamedStates{{"$", state_}}, "$");
      }
    } catch (const Error& e) {
      const std::string what = e.what();
      const std::string prefix = "expression '";
      const std::size_t at = what.find(": ");
      throw Error("calculated dimension '" + text_.substr(0, 200) + "'" +
                  (what.rfind(prefix, 0) == 0 && at != std::string::npos ? what.substr(at) : ": " + what));
    }
    walk(expr_.root);
    const std::uint32_t table = choose_table();
    for (AggrLeaf& a : aggrs_) compute_aggr(a, blanked);
    Plan plan = Plan::bind(
        expr_, expr_.root,
        [&](std::uint32_t node) -> std::uint32_t {
          const ExprNode& x = expr_.nodes[node];
          Leaf leaf;
          if (x.kind == ExprNode::Kind::kField) {
            leaf.field = data_.find_field(x.name);
          } else {
            for (std::size_t i = 0; i < aggrs_.size(); ++i)
              if (aggrs_[i].node == node) leaf.aggr = static_cast<std::int64_t>(i);
          }
          leaves_.push_back(leaf);
          return static_cast<std::uint32_t>(leaves_.size() - 1);
        },
        [&](std::uint32_t node) {
          const ExprNode& x = expr_.nodes[node];
          return x.kind == ExprNode::Kind::kCall && iequals(x.name, "aggr");
        });
    return evaluate(table, plan);
  }

 private:
  void walk(std::uint32_t n) {
    const ExprNode& x = expr_.nodes[n];
    switch (x.kind) {
      case ExprNode::Kind::kField: {
        const int f = data_.find_field(x.name);
        if (f < 0) fail(text_, x.position, "unknown field '" + x.name + "'");
        add_source(static_cast<std::uint32_t>(f), x.position);
        return;
      }
      case ExprNode::Kind::kAgg:
      case ExprNode::Kind::kStar:
        fail(text_, x.position,
             "an aggregation (" + x.name + ") outside Aggr; a calculated dimension is computed per record");
      case ExprNode::Kind::kSet:
      case ExprNode::Kind::kScoped:
        fail(text_, x.position, "a set expression outside Aggr in a calculated dimension");
      case ExprNode::Kind::kCall:
        if (iequals(x.name, "aggr")) {
          AggrLeaf a;
          a.node = n;
          for (std::size_t i = 1; i < x.args.size(); ++i) {
            const ExprNode& d = expr_.nodes[x.args[i]];
            const int f = data_.find_field(d.name);
            if (f < 0) fail(text_, d.position, "unknown field '" + d.name + "'");
            a.fields.push_back(static_cast<std::uint32_t>(f));
            add_source(static_cast<std::uint32_t>(f), d.position);
          }
          if (!x.args.empty()) collect_inner(x.args[0]);
          aggrs_.push_back(std::move(a));
          return;
        }
        if (find_inter_record_function(x.name) != nullptr)
          fail(text_, x.position,
               "an inter-record function (" + x.name + ") outside Aggr; a calculated dimension is computed per record");
        break;
      default:
        break;
    }
    for (const std::uint32_t c : x.args) walk(c);
  }

  // The fields an Aggr's expression reads: the table holding most of them is preferred.
  void collect_inner(std::uint32_t n) {
    const ExprNode& x = expr_.nodes[n];
    if (x.kind == ExprNode::Kind::kField) {
      const int f = data_.find_field(x.name);
      if (f >= 0) inner_.push_back(static_cast<std::uint32_t>(f));
    }
    for (const std::uint32_t c : x.args) collect_inner(c);
  }

  void add_source(std::uint32_t field, std::size_t pos) {
    if (std::find(sources_.begin(), sources_.end(), field) == sources_.end()) {
      sources_.push_back(field);
      positions_.push_back(pos);
    }
  }

  // The data table holding every field the expression reads; when several do (key fields),
  // the one holding most fields of the Aggr expressions, then the largest.
  std::uint32_t choose_table() const {
    const auto& tables = data_.tables();
    std::int64_t best = -1;
    std::size_t best_inner = 0;
    for (std::size_t t = 0; t < tables.size(); ++t) {
      if (tables[t].is_system) continue;
      bool all = true;
      for (const std::uint32_t f : sources_) all = all && tables[t].column_of(f) >= 0;
      if (!all) continue;
      const auto inner = static_cast<std::size_t>(
          std::count_if(inner_.begin(), inner_.end(), [&](std::uint32_t f) { return tables[t].column_of(f) >= 0; }));
      if (best < 0 || inner > best_inner ||
          (inner == best_inner && tables[t].rows > tables[static_cast<std::size_t>(best)].rows)) {
        best = static_cast<std::int64_t>(t);
        best_inner = inner;
      }
    }
    if (best >= 0) return static_cast<std::uint32_t>(best);
    if (sources_.empty()) fail(text_, 1, "no data table to compute the calculated dimension on");
    // Name the first field no table holding the first one has.
    for (std::size_t i = 1; i < sources_.size(); ++i) {
      bool together = false;
      for (const auto& t : tables)
        together = together || (t.column_of(sources_[0]) >= 0 && t.column_of(sources_[i]) >= 0);
      if (!together)
        fail(text_, positions_[i],
             "fields of more than one table ('" + data_.fields()[sources_[0]].name + "' and '" +
                 data_.fields()[sources_[i]].name + "'); a calculated dimension reads the records of one table");
    }
    fail(text_, positions_[0], "fields of more than one table; a calculated dimension reads the records of one table");
  }

  void compute_aggr(AggrLeaf& a, const std::string& blanked) {
    const ExprNode& x = expr_.nodes[a.node];
    HypercubeSpec spec;
    for (const std::uint32_t f : a.fields) {
      spec.dimensions.push_back(data_.fields()[f].name);
      a.radix.push_back(std::uint64_t{data_.fields()[f].symbols.size()} + 1);
    }
    spec.measures.push_back(blanked.substr(x.position, call_end(blanked, x.position) - x.position));
    spec.suppress_missing = true;
    std::shared_ptr<const Hypercube> cube;
    try {
      cube = states_ ? hypercube(model_, state_, spec, rows_, states_, state_name_)
                     : hypercube(model_, state_, spec, rows_);
    } catch (const Error& e) {
      // The nested cube names the Aggr's text: name the dimension and its position instead.
      std::string what = e.what();
      const std::string prefix = "expression '" + spec.measures[0] + "': ";
      const std::string at = " at position ";
      const std::size_t where = what.rfind(at);
      if (what.rfind(prefix, 0) == 0 && where != std::string::npos && where >= prefix.size()) {
        const std::size_t pos = std::stoul(what.substr(where + at.size())) + x.position;
        fail(text_, pos, what.substr(prefix.size(), where - prefix.size()));
      }
      throw Error("calculated dimension '" + text_.substr(0, 200) + "': " + what);
    }
    for (std::size_t r = 0; r < cube->size(); ++r) {
      std::uint64_t key = 0, stride = 1;
      for (std::size_t d = 0; d < a.fields.size(); ++d) {
        key += (std::uint64_t{cube->codes(d)[r]} + 1) * stride;
        stride *= a.radix[d];
      }
      a.values.emplace(key, cube_value(data_, *cube, 0, r));
    }
  }

  // The inputs for one record, given its codes of the source fields.
  void fill(std::vector<Value>& in, const std::uint32_t* codes) const {
    for (std::size_t i = 0; i < leaves_.size(); ++i) {
      const Leaf& l = leaves_[i];
      if (l.field >= 0) {
        const auto f = static_cast<std::uint32_t>(l.field);
        const std::size_t s = static_cast<std::size_t>(std::find(sources_.begin(), sources_.end(), f) - sources_.begin());
        in[i] = symbol_value(data_.fields()[f].symbols, codes[s]);
      } else {
        const AggrLeaf& a = aggrs_[static_cast<std::size_t>(l.aggr)];
        std::uint64_t key = 0, stride = 1;
        bool null = false;
        for (std::size_t d = 0; d < a.fields.size(); ++d) {
          const std::size_t s =
              static_cast<std::size_t>(std::find(sources_.begin(), sources_.end(), a.fields[d]) - sources_.begin());
          null = null || codes[s] == kNull;
          key += (std::uint64_t{codes[s]} + 1) * stride;
          stride *= a.radix[d];
        }
        const auto it = null ? a.values.end() : a.values.find(key);
        in[i] = it == a.values.end() ? Value::null() : it->second;
      }
    }
  }

  Derived evaluate(std::uint32_t table, const Plan& plan) {
    const Table& t = data_.tables()[table];
    Derived out;
    out.table = table;
    SymbolTableBuilder symbols;
    // Each record's result where they are kept whole before packing (not zeroed: every row is
    // written once), and how many are NULL.
    const auto all_rows = [&] { return std::unique_ptr<std::uint32_t[]>(new std::uint32_t[std::max<std::size_t>(t.rows, 1)]); };
    std::unique_ptr<std::uint32_t[]> codes;
    std::uint64_t null_rows = 0;
    bool packed = false;  // the column made already
    std::vector<Value> in(leaves_.size());
    if (sources_.size() == 1) {
      // Once per distinct value of the one field read; records then map their codes.
      const std::uint32_t f = sources_[0];
      out.source = data_.fields()[f].name;
      const std::uint32_t n = data_.fields()[f].symbols.size();
      std::vector<std::uint32_t> remap(std::size_t{n} + 1);
      for (std::uint32_t s = 0; s <= n; ++s) {
        // Results as many as the values so far (`='c' & Customer`): the table sized for them
        // all at once (at most a result per value), not grown and rehashed on the way.
        if (s == 1024 && symbols.size() > 512) symbols.reserve(std::size_t{n} + 1);
        const std::uint32_t code = s == n ? kNull : s;
        fill(in, &code);
        remap[s] = intern(symbols, plan.eval(in.data()));
      }
      const PackedIndex& index = t.columns[static_cast<std::size_t>(t.column_of(f))].index;
      const std::size_t batches = (t.rows + kBatch - 1) / kBatch;
      // The results of records [first, first+count) into o, from their codes of the field.
      const auto results = [&](std::size_t first, std::size_t count, std::uint32_t* o) {
        index.decode(first, count, o);
        for (std::size_t i = 0; i < count; ++i) o[i] = remap[o[i] == kNull ? n : o[i]];
      };
      const bool source_nulls = index.non_null_count() < t.rows;
      const auto values_end = remap.begin() + n;
      if ((!source_nulls || remap[n] != kNull) && std::find(remap.begin(), values_end, kNull) == values_end) {
        // No record's result is NULL: the column is laid out at once and each batch of the
        // field's codes is mapped and packed as it is decoded, with no array of every record's
        // result (40 MB of fresh pages for 10M rows).
        out.symbols = symbols.finish();
        out.index = PackedIndex::for_rows(t.rows, out.symbols.size(), 0);
        packed = true;
        if (out.index.bit_width() == 1) {
          // Two results: the column's bits are the rows whose value gives the second, matched
          // whole blocks at a time as a selection matches a field's rows, and stored as they
          // come. NULL is in no set: where its result is the second, the rows giving the first
          // are matched and the bits flipped.
          const bool flip = source_nulls && remap[n] == 1;
          Bitset set(std::size_t{n} + 1);
          for (std::uint32_t s = 0; s < n; ++s)
            if ((remap[s] == 1) != flip) set.set(s);
          const bool by_code = index.bit_width() <= PackedIndex::kMaxCodeSetWidth;
          const std::vector<std::uint8_t> code_set = by_code ? index.code_set(set.words(), n) : std::vector<std::uint8_t>{};
          const std::size_t whole = t.rows / 64, per_batch = kBatch / 64;
          parallel_for((whole + per_batch - 1) / per_batch, [&](std::size_t b) {
            thread_local std::vector<std::uint64_t> words;
            words.resize(per_batch);
            const std::size_t first = b * per_batch, count = std::min(per_batch, whole - first);
            if (by_code) {
              index.match_codes(first, count, code_set.data(), words.data());
            } else {
              index.match_blocks(first, count, set.words(), n, words.data());
            }
            if (flip)
              for (std::size_t i = 0; i < count; ++i) words[i] = ~words[i];
            out.index.write_blocks(first, count, words.data());
          });
          if (whole * 64 < t.rows) {  // the rows past the last whole block
            std::vector<std::uint32_t> tail(t.rows - whole * 64);
            results(whole * 64, tail.size(), tail.data());
            out.index.write_rows(whole * 64, tail.size(), tail.data());
          }
        } else if (out.index.bit_width() != 0) {
          parallel_for(batches, [&](std::size_t b) {
            thread_local std::vector<std::uint32_t> batch;
            batch.resize(kBatch);
            const std::size_t first = b * kBatch, count = std::min(kBatch, t.rows - first);
            if (source_nulls) {
              results(first, count, batch.data());
              out.index.write_rows(first, count, batch.data());
            } else {
              index.decode(first, count, batch.data());
              out.index.write_rows(first, count, batch.data(), remap.data());  // mapped as packed
            }
          });
        }
      } else {
        codes = all_rows();
        std::atomic<std::uint64_t> nulls{0};
        parallel_for(batches, [&](std::size_t b) {
          const std::size_t first = b * kBatch, count = std::min(kBatch, t.rows - first);
          std::uint32_t* o = codes.get() + first;
          results(first, count, o);
          nulls.fetch_add(static_cast<std::uint64_t>(std::count(o, o + count, kNull)), std::memory_order_relaxed);
        });
        null_rows = nulls.load();
      }
      remap.pop_back();
      out.source_map = std::move(remap);
    } else if (sources_.empty()) {
      // One result for every record: a column of no bits (one symbol, or NULL alone), so no
      // record's code is written.
      null_rows = intern(symbols, plan.eval(in.data())) == kNull ? t.rows : 0;
    } else {
      codes = all_rows();
      std::vector<std::vector<std::uint32_t>> cols(sources_.size(), std::vector<std::uint32_t>(kBatch));
      std::vector<std::uint32_t> row(sources_.size());
      for (std::size_t first = 0; first < t.rows; first += kBatch) {
        const std::size_t count = std::min(kBatch, t.rows - first);
        for (std::size_t s = 0; s < sources_.size(); ++s)
          t.columns[static_cast<std::size_t>(t.column_of(sources_[s]))].index.decode(first, count, cols[s].data());
        for (std::size_t i = 0; i < count; ++i) {
          for (std::size_t s = 0; s < sources_.size(); ++s) row[s] = cols[s][i];
          fill(in, row.data());
          codes[first + i] = intern(symbols, plan.eval(in.data()));
          null_rows += codes[first + i] == kNull;
        }
      }
    }
    if (!packed) {
      out.symbols = symbols.finish();
      // The NULLs are counted already: the column is written in one parallel pass.
      out.index = PackedIndex::for_rows(t.rows, null_rows == t.rows ? 0 : out.symbols.size(), null_rows);
      if (out.index.bit_width() != 0)
        parallel_ranges(t.rows, 64, [&](std::size_t b, std::size_t e) { out.index.write_rows(b, e - b, codes.get() + b); });
    }
    return out;
  }

  const AssociativeModel& model_;
  const DataModel& data_;
  const SelectionState& state_;
  std::shared_ptr<const RowStates> rows_;
  const NamedStates* states_;
  const std::string& state_name_;
  const std::string& text_;
  Expression expr_;
  std::vector<std::uint32_t> sources_;
  std::vector<std::size_t> positions_;
  std::vector<std::uint32_t> inner_;
  std::vector<AggrLeaf> aggrs_;
  std::vector<Leaf> leaves_;
};

bool reads_aggr(const std::string& text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("aggr") != std::string::npos;
}

CalculatedModel build(const AssociativeModel& model, const SelectionState& state, std::shared_ptr<const RowStates> rows,
                      const NamedStates* states, const std::string& state_name,
                      const std::vector<std::string>& dimensions) {
  std::shared_ptr<DataModel> data;
  {
    // The copy shares the packed indexes; it copies the symbol tables, writing each element.
    big_blocks::Uncleared every_byte_is_copied;
    data = std::make_shared<DataModel>(model.data());
  }
  CalculatedModel out;
  for (const std::string& d : dimensions) {
    if (!is_calculated_dimension(d)) {
      out.fields.push_back(d);
      out.sources.emplace_back();
      out.source_maps.emplace_back();
      continue;
    }
    Derived derived = Calculator(model, state, rows, states, state_name, d).run();
    std::string name = d;
    while (data->find_field(name) >= 0) name += " ";  // the same text twice, or a field so named
    auto& fields = ModelAccess::fields(*data);
    Field field;
    field.name = name;
    field.symbols = std::move(derived.symbols);
    field.src_tables = {derived.table};
    field.total_count = derived.index.non_null_count();
    const auto id = static_cast<std::uint32_t>(fields.size());
    fields.push_back(std::move(field));
    ModelAccess::field_ids(*data)[name] = id;
    ModelAccess::tables(*data)[derived.table].columns.push_back(Column{id, std::move(derived.index)});
    out.fields.push_back(name);
    out.sources.push_back(derived.source);
    out.source_maps.push_back(std::move(derived.source_map));
  }
  out.model = AssociativeModel::create(std::move(data));
  return out;
}

}  // namespace

CalculatedModel with_calculated_dimensions(const AssociativeModel& model, const SelectionState& state,
                                           std::shared_ptr<const RowStates> rows, const NamedStates* states,
                                           const std::string& state_name, const std::vector<std::string>& dimensions) {
  const bool scalar = std::none_of(dimensions.begin(), dimensions.end(), [](const std::string& d) {
    return is_calculated_dimension(d) && reads_aggr(d);
  });
  if (!scalar) return build(model, state, std::move(rows), states, state_name, dimensions);
  // Scalar expressions do not depend on the selection: one derived model per model and texts.
  CacheKey key{&model, kCalculatedCacheKind, 0, {}};
  for (const std::string& d : dimensions) {
    key.state.push_back(static_cast<std::uint32_t>(d.size()));
    for (const char c : d) key.state.push_back(static_cast<unsigned char>(c));
  }
  ResultCache& cache = ResultCache::instance();
  if (auto hit = cache.find(key)) return *std::static_pointer_cast<const CalculatedModel>(hit);
  auto built = std::make_shared<CalculatedModel>(build(model, state, std::move(rows), states, state_name, dimensions));
  // The copy shares the model's packed indexes: its own bytes are the rest.
  std::size_t bytes = built->model->data().static_byte_size();
  for (const Table& t : model.data().tables())
    for (const Column& c : t.columns) bytes -= c.index.byte_size();
  cache.insert(std::move(key), model.weak_from_this(), built, bytes);
  return *built;
}

}  // namespace assoc
