// Set analysis, the records: what a parsed set expression selects under a session's states
// (spec chart-expressions §2), and the search strings its element lists match with.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <unordered_set>

#include "assoc/error.hpp"
#include "assoc/hypercube.hpp"
#include "assoc/set_expression.hpp"
#include "assoc/value.hpp"
#include "selection_kernels.hpp"

namespace assoc {

namespace {

// ---- search strings --------------------------------------------------------------------------

char32_t fold(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;          // Latin-1
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;         // Greek
  if (c >= 0x410 && c <= 0x42F) return c + 32;                       // Cyrillic
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

// Code points of UTF-8 text, folded; bytes that are not UTF-8 stand for themselves.
std::u32string folded(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
    if (i + n > s.size()) n = 1;
    char32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (std::size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(fold(c));
    i += n;
  }
  return out;
}

bool piece_at(const std::u32string& v, std::size_t pos, const std::u32string& p) {
  if (pos + p.size() > v.size()) return false;
  for (std::size_t k = 0; k < p.size(); ++k)
    if (p[k] != U'?' && p[k] != v[pos + k]) return false;
  return true;
}


// Whether a text is a number as a whole (blanks around it allowed).
bool parse_number(const std::string& text, double& out) {
  const char* b = text.c_str();
  while (*b && std::isspace(static_cast<unsigned char>(*b))) ++b;
  if (!*b) return false;
  char* end = nullptr;
  out = std::strtod(b, &end);
  if (end == b) return false;
  while (*end && std::isspace(static_cast<unsigned char>(*end))) ++end;
  return *end == 0 && std::isfinite(out);
}

}  // namespace

bool search_match(std::string_view text, std::string_view pattern) {
  const std::u32string v = folded(text), p = folded(pattern);
  std::vector<std::u32string> pieces(1);
  for (const char32_t c : p) {
    if (c == U'*') {
      pieces.emplace_back();
    } else {
      pieces.back().push_back(c);
    }
  }
  if (pieces.size() == 1) return v.size() == pieces[0].size() && piece_at(v, 0, pieces[0]);
  const std::u32string& first = pieces.front();
  const std::u32string& last = pieces.back();
  if (v.size() < first.size() + last.size()) return false;
  std::size_t start = first.size();
  const std::size_t end = v.size() - last.size();
  if (!piece_at(v, 0, first) || !piece_at(v, end, last)) return false;
  for (std::size_t i = 1; i + 1 < pieces.size(); ++i) {
    const std::u32string& piece = pieces[i];
    if (piece.empty()) continue;
    std::size_t at = start;
    // A piece without ? is found by a plain search; with ?, each place is checked (at most
    // the piece's length per place, no backtracking).
    if (piece.find(U'?') == std::u32string::npos) {
      at = v.find(piece, start);
      if (at == std::u32string::npos || at + piece.size() > end) return false;
    } else {
      while (at + piece.size() <= end && !piece_at(v, at, piece)) ++at;
      if (at + piece.size() > end) return false;
    }
    start = at + piece.size();
  }
  return true;
}

// ---- evaluation --------------------------------------------------------------------------------

// Values of a field an element set stands for: every value (no restriction), or a bitset
// over the field's symbols.
struct SetEvaluator::Values {
  bool all = false;
  Bitset bits;
};

SetEvaluator::SetEvaluator(const AssociativeModel& model, const NamedStates& states, std::string object_state,
                           std::string expr, const SelectionState* known, std::shared_ptr<const RowStates> known_rows)
    : model_(model),
      states_(states),
      object_state_(std::move(object_state)),
      expr_(std::move(expr)),
      known_(known_rows ? known : nullptr),
      known_rows_(std::move(known_rows)) {}

void SetEvaluator::fail(std::size_t position, const std::string& what) const {
  const std::string shown = expr_.size() > 60 ? expr_.substr(0, 57) + "..." : expr_;
  throw Error("expression '" + shown + "': " + what + " at position " + std::to_string(position));
}

const SelectionState& SetEvaluator::state_named(const std::string& name, std::size_t position) const {
  auto it = states_.find(name);
  if (it == states_.end())
    fail(position, "unknown set identifier '" + name + "': no alternate state or bookmark of that name");
  return it->second;
}

SelectionState SetEvaluator::unselected() const {
  // Every state of a session carries the session's row mask; identifier 1 keeps it too.
  return states_.empty() ? SelectionState() : states_.begin()->second.unselected();
}

std::uint32_t SetEvaluator::field_named(const std::string& name, std::size_t position) const {
  const int f = model_.data().find_field(name);
  if (f < 0) fail(position, "unknown field '" + name + "' in the set expression");
  return static_cast<std::uint32_t>(f);
}

std::shared_ptr<const RowStates> SetEvaluator::rows(const SetNode& set) {
  const std::string key = canonical_set(set);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::shared_ptr<const RowStates> out;
  if (set.kind == SetNode::Kind::kTerm) {
    out = term_rows(set);
  } else {
    const auto& tables = model_.data().tables();
    auto a = rows(*set.a);
    std::shared_ptr<const RowStates> b = set.b ? rows(*set.b) : nullptr;
    const std::shared_ptr<const RowStates> every = model_.rows(unselected());
    auto r = std::make_shared<RowStates>();
    r->rows.resize(tables.size());
    r->possible.resize(tables.size());
    for (std::size_t t = 0; t < tables.size(); ++t) {
      auto full = [&](const std::shared_ptr<const Bitset>& x) {
        if (x) return *x;
        Bitset all(tables[t].rows);
        all.set_first(tables[t].rows);
        return all;
      };
      Bitset x = full(a->rows[t]);
      if (set.kind == SetNode::Kind::kNot) {
        Bitset all = full(every->rows[t]);  // the complement within what the session sees
        all.and_not(x);
        x = std::move(all);
      } else {
        const Bitset y = full(b->rows[t]);
        switch (set.op) {
          case '+': x.or_with(y); break;
          case '*': x.and_with(y); break;
          case '-': x.and_not(y); break;
          default: {  // '/'
            Bitset both = x;
            both.and_with(y);
            x.or_with(y);
            x.and_not(both);
          }
        }
      }
      r->possible[t] = x.count();
      r->rows[t] = std::make_shared<const Bitset>(std::move(x));
    }
    out = r;
  }
  cache_.emplace(key, out);
  return out;
}

std::shared_ptr<const RowStates> SetEvaluator::term_rows(const SetNode& term) {
  if (term.ident == "0") {
    const auto& tables = model_.data().tables();
    auto r = std::make_shared<RowStates>();
    for (const Table& t : tables) {
      r->rows.push_back(std::make_shared<const Bitset>(t.rows));
      r->possible.push_back(0);
    }
    return r;
  }
  SelectionState state = unselected();
  if (term.ident.empty()) {
    state = state_named(object_state_, term.position);
  } else if (term.ident != "1") {
    state = state_named(term.ident, term.position);
  }
  const SelectionState base = state;
  for (const FieldModifier& m : term.modifiers) {
    const std::uint32_t f = field_named(m.field, m.position);
    if (!m.value) {
      state.clear(f);
      continue;
    }
    Values v = element_values(*m.value, f, base);
    if (m.op != '=') {
      // F op= X is F = F op X, F being the field's selection in the term's state.
      Values current = selected_values(base, f, f);
      const std::uint32_t n = model_.data().fields()[f].symbols.size();
      if (current.all) {
        if (m.op == '+') {
          v.all = true;
        } else if (m.op == '-' || m.op == '/') {
          if (v.all) {
            v = Values{false, Bitset(std::size_t{n} + 1)};
          } else {
            Bitset c(std::size_t{n} + 1);
            c.set_first(n);
            c.and_not(v.bits);
            v.bits = std::move(c);
          }
        }
      } else if (v.all) {
        if (m.op == '*') {
          v = std::move(current);
        } else if (m.op == '-') {
          v = Values{false, Bitset(std::size_t{n} + 1)};
        } else if (m.op == '/') {
          Bitset c(std::size_t{n} + 1);
          c.set_first(n);
          c.and_not(current.bits);
          v = Values{false, std::move(c)};
        }
      } else {
        Bitset x = current.bits;
        switch (m.op) {
          case '+': x.or_with(v.bits); break;
          case '*': x.and_with(v.bits); break;
          case '-': x.and_not(v.bits); break;
          default: {
            Bitset both = x;
            both.and_with(v.bits);
            x.or_with(v.bits);
            x.and_not(both);
          }
        }
        v.bits = std::move(x);
      }
    }
    if (v.all) {
      state.clear(f);
      continue;
    }
    std::vector<std::uint32_t> symbols;
    v.bits.for_each([&](std::size_t i) {
      if (i < model_.data().fields()[f].symbols.size()) symbols.push_back(static_cast<std::uint32_t>(i));
    });
    if (symbols.empty()) {
      state.set_empty(f);
    } else {
      state.set(f, std::move(symbols));
    }
  }
  // A term on the state whose rows are known (the object's, mostly) narrows it, typically: its
  // tables linked to no other then match only the fields the modifiers change.
  if (known_ != nullptr && base.encode() == known_->encode()) return model_.rows(state, *known_, known_rows_);
  return model_.rows(state);
}

SetEvaluator::Values SetEvaluator::selected_values(const SelectionState& state, std::uint32_t of_field,
                                                   std::uint32_t field) {
  const auto& fields = model_.data().fields();
  const std::uint32_t n = fields[field].symbols.size();
  auto it = state.fields().find(of_field);
  if (it == state.fields().end()) return Values{true, Bitset()};
  Values out{false, Bitset(std::size_t{n} + 1)};
  if (of_field == field) {
    for (const std::uint32_t s : it->second) out.bits.set(s);
    return out;
  }
  Bitset from(std::size_t{fields[of_field].symbols.size()} + 1);
  for (const std::uint32_t s : it->second) from.set(s);
  out.bits = [&] {
    // Values of another field: matched by value (numbers by number, texts by text).
    std::unordered_set<double> numbers;
    std::unordered_set<std::string_view> texts;
    const SymbolTable& src = fields[of_field].symbols;
    from.for_each([&](std::size_t i) {
      if (i >= src.size()) return;
      const auto s = static_cast<std::uint32_t>(i);
      if (src.has_number(s)) {
        numbers.insert(src.number(s));
      } else if (src.has_text(s)) {
        texts.insert(src.text(s));
      }
    });
    const SymbolTable& dst = fields[field].symbols;
    Bitset bits(std::size_t{n} + 1);
    for (std::uint32_t s = 0; s < n; ++s) {
      const bool hit = dst.has_number(s) ? numbers.count(dst.number(s)) != 0
                                         : dst.has_text(s) && texts.count(dst.text(s)) != 0;
      if (hit) bits.set(s);
    }
    return bits;
  }();
  return out;
}

SetEvaluator::Values SetEvaluator::element_values(const ElementNode& e, std::uint32_t field, const SelectionState& base) {
  const std::uint32_t n = model_.data().fields()[field].symbols.size();
  auto complement = [&](const Values& v) {
    Values out{false, Bitset(std::size_t{n} + 1)};
    if (v.all) return out;
    out.bits.set_first(n);
    out.bits.and_not(v.bits);
    return out;
  };
  switch (e.kind) {
    case ElementNode::Kind::kList: return list_values(e, field);
    case ElementNode::Kind::kField: {
      const SelectionState& st = e.state.empty() ? base : state_named(e.state, e.position);
      return selected_values(st, field_named(e.field, e.position), field);
    }
    case ElementNode::Kind::kP:
    case ElementNode::Kind::kE: {
      const std::uint32_t of = e.field.empty() ? field : field_named(e.field, e.position);
      std::shared_ptr<const RowStates> r = e.set ? rows(*e.set) : model_.rows(base);
      const std::uint32_t m = model_.data().fields()[of].symbols.size();
      Bitset possible = model_.values_on_possible(of, *r);
      if (e.kind == ElementNode::Kind::kE) {
        Bitset all = detail::symbol_set(m);
        all.set_first(m);
        const SelectionState none = unselected();
        if (none.mask()) all.and_with(none.mask()->values(of));  // a value off the mask is not excluded
        all.and_not(possible);
        possible = std::move(all);
      }
      if (of == field) return Values{false, std::move(possible)};
      std::vector<std::uint32_t> symbols;
      possible.for_each([&](std::size_t i) {
        if (i < m) symbols.push_back(static_cast<std::uint32_t>(i));
      });
      SelectionState tmp;
      if (symbols.empty()) return Values{false, Bitset(std::size_t{n} + 1)};
      tmp.set(of, std::move(symbols));
      return selected_values(tmp, of, field);
    }
    case ElementNode::Kind::kNot: return complement(element_values(*e.a, field, base));
    case ElementNode::Kind::kOp: {
      Values a = element_values(*e.a, field, base);
      Values b = element_values(*e.b, field, base);
      switch (e.op) {
        case '+':
          if (a.all || b.all) return Values{true, Bitset()};
          a.bits.or_with(b.bits);
          return a;
        case '*':
          if (a.all) return b;
          if (b.all) return a;
          a.bits.and_with(b.bits);
          return a;
        case '-':
          if (b.all) return Values{false, Bitset(std::size_t{n} + 1)};
          if (a.all) return complement(b);
          a.bits.and_not(b.bits);
          return a;
        default: {
          if (a.all && b.all) return Values{false, Bitset(std::size_t{n} + 1)};
          if (a.all) return complement(b);
          if (b.all) return complement(a);
          Bitset both = a.bits;
          both.and_with(b.bits);
          a.bits.or_with(b.bits);
          a.bits.and_not(both);
          return a;
        }
      }
    }
  }
  return Values{true, Bitset()};
}

SetEvaluator::Values SetEvaluator::list_values(const ElementNode& e, std::uint32_t field) {
  const SymbolTable& symbols = model_.data().fields()[field].symbols;
  const std::uint32_t n = symbols.size();
  Values out{false, Bitset(std::size_t{n} + 1)};
  std::unordered_set<double> numbers;
  std::unordered_set<std::string> exact;          // 'literal' texts
  std::unordered_set<std::u32string> any_case;    // bare words
  std::vector<std::string> patterns;              // "searches"
  struct Range {
    std::vector<std::pair<std::string, double>> bounds;
  };
  std::vector<Range> ranges;
  for (const SetElement& x : e.elements) {
    double v = 0;
    if (x.kind != SetElement::Kind::kSearch) {
      if (parse_number(x.text, v)) numbers.insert(v);
      if (x.kind == SetElement::Kind::kLiteral) {
        exact.insert(x.text);
      } else {
        any_case.insert(folded(x.text));
      }
      continue;
    }
    if (!x.text.empty() && x.text[0] == '=') {
      const Values found = search_expression(x.text.substr(1), x.position + 2, field);
      out.bits.or_with(found.bits);
      continue;
    }
    if (!x.text.empty() && (x.text[0] == '<' || x.text[0] == '>')) {
      Range r;
      std::size_t i = 0;
      while (i < x.text.size()) {
        while (i < x.text.size() && std::isspace(static_cast<unsigned char>(x.text[i]))) ++i;
        if (i >= x.text.size()) break;
        std::string op(1, x.text[i]);
        if (op != "<" && op != ">") fail(x.position + 1 + i, "a numeric search is bounds like \">=10<20\"");
        ++i;
        if (i < x.text.size() && x.text[i] == '=') {
          op += "=";
          ++i;
        }
        std::size_t j = i;
        while (j < x.text.size() && x.text[j] != '<' && x.text[j] != '>') ++j;
        double bound = 0;
        if (!parse_number(x.text.substr(i, j - i), bound))
          fail(x.position + 1 + i, "a numeric search bound must be a number");
        r.bounds.emplace_back(op, bound);
        i = j;
      }
      ranges.push_back(std::move(r));
      continue;
    }
    patterns.push_back(x.text);
  }
  for (std::uint32_t s = 0; s < n; ++s) {
    const bool has_num = symbols.has_number(s);
    const double num = has_num ? symbols.number(s) : 0;
    if (has_num && numbers.count(num)) {
      out.bits.set(s);
      continue;
    }
    Value v;
    if (has_num) v.num = num;
    if (symbols.has_text(s)) {
      v.text = std::string(symbols.text(s));
      v.has_text = true;
    }
    const std::string text = shown_text(v);
    if (exact.count(text) || (!any_case.empty() && any_case.count(folded(text)))) {
      out.bits.set(s);
      continue;
    }
    bool hit = false;
    for (const Range& r : ranges) {
      if (!has_num) break;
      bool ok = true;
      for (const auto& [op, b] : r.bounds)
        ok = ok && (op == "<" ? num < b : op == "<=" ? num <= b : op == ">" ? num > b : num >= b);
      if (ok) {
        hit = true;
        break;
      }
    }
    for (std::size_t p = 0; p < patterns.size() && !hit; ++p) hit = search_match(text, patterns[p]);
    if (hit) out.bits.set(s);
  }
  return out;
}

SetEvaluator::Values SetEvaluator::search_expression(const std::string& cond, std::size_t position, std::uint32_t field) {
  const std::uint32_t n = model_.data().fields()[field].symbols.size();
  Values out{false, Bitset(std::size_t{n} + 1)};
  HypercubeSpec spec;
  spec.dimensions = {model_.data().fields()[field].name};
  spec.measures = {cond};
  std::shared_ptr<const Hypercube> cube;
  try {
    cube = hypercube(model_, state_named(object_state_, position), spec, nullptr, &states_, object_state_);
  } catch (const Error& err) {
    fail(position, std::string("in the search \"=") + cond + "\" starting here: " + err.what());
  }
  const auto& codes = cube->codes(0);
  const auto& values = cube->values(0);
  for (std::size_t r = 0; r < cube->size(); ++r)
    if (codes[r] != kNull && !std::isnan(values[r]) && values[r] != 0) out.bits.set(codes[r]);
  return out;
}
}  // namespace assoc
