#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include "assoc/error.hpp"
#include "assoc/expression.hpp"
#include "assoc/functions.hpp"
#include "assoc/state_functions.hpp"
#include "assoc/inter_record.hpp"
#include "assoc/number_text.hpp"

namespace assoc {
namespace {

bool is_name_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || c == '$' || c == '.' || c == '#' || c == '%' || u >= 0x80;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Recursive descent, one function per precedence level (low to high):
// or := and (('or'|'xor') and)*; and := not ('and' not)*; not := 'not' not | cmp;
// cmp := concat (cmpop concat)*; concat := sum ('&' sum)*; sum := product (('+'|'-') product)*;
// product := unary (('*'|'/') unary)*; unary := ('-'|'+') unary | primary.
// Every nesting step (parentheses, calls, prefix operators) counts against
// kMaxExpressionDepth, and so does the depth of the tree each operator builds.
class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) { e_.text = text; }

  Expression run() {
    skip_space();
    if (at_end()) fail(pos_, "empty expression");
    e_.root = parse_scope();
    skip_space();
    if (!at_end()) fail(pos_, "unexpected '" + std::string(1, s_[pos_]) + "'");
    return std::move(e_);
  }

 private:
  // A long expression is named by its start: the position says where the problem is.
  [[noreturn]] void fail(std::size_t pos, const std::string& what) const {
    const std::string shown = s_.size() <= kShownChars ? s_ : s_.substr(0, kShownChars) + "...";
    throw Error("expression '" + shown + "': " + what + " at position " + std::to_string(pos));
  }
  static constexpr std::size_t kShownChars = 200;
  bool at_end() const { return pos_ >= s_.size(); }
  void skip_space() {
    for (;;) {
      while (!at_end() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (s_.compare(pos_, 2, "//") == 0) {
        while (!at_end() && s_[pos_] != '\n') ++pos_;
      } else if (s_.compare(pos_, 2, "/*") == 0) {
        const std::size_t end = s_.find("*/", pos_ + 2);
        if (end == std::string::npos) fail(pos_, "unclosed comment");
        pos_ = end + 2;
      } else {
        return;
      }
    }
  }
  bool peek(char c) {
    skip_space();
    return !at_end() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  bool accept2(const char* two) {
    skip_space();
    if (s_.compare(pos_, 2, two) != 0) return false;
    pos_ += 2;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(pos_, at_end() ? std::string("expected '") + c + "', found the end"
                                        : std::string("expected '") + c + "'");
  }
  // A keyword (and, or, not, like, distinct, total, …) as a whole word, case-insensitively.
  bool accept_word(std::string_view word) {
    skip_space();
    if (s_.size() - pos_ < word.size()) return false;
    if (lower(std::string_view(s_).substr(pos_, word.size())) != word) return false;
    const std::size_t end = pos_ + word.size();
    if (end < s_.size() && is_name_char(s_[end])) return false;
    pos_ = end;
    return true;
  }

  struct DepthGuard {
    Parser& p;
    DepthGuard(Parser& parser, std::size_t pos) : p(parser) {
      if (++p.depth_ > kMaxExpressionDepth)
        p.fail(pos, "expression nested deeper than " + std::to_string(kMaxExpressionDepth) + " levels");
    }
    ~DepthGuard() { --p.depth_; }
  };

  std::uint32_t add(ExprNode n) {
    std::size_t d = 1;
    for (const std::uint32_t a : n.args) d = std::max(d, tree_depth_[a] + 1);
    if (d > kMaxExpressionDepth)
      fail(n.position, "expression nested deeper than " + std::to_string(kMaxExpressionDepth) + " levels");
    e_.nodes.push_back(std::move(n));
    tree_depth_.push_back(d);
    return static_cast<std::uint32_t>(e_.nodes.size() - 1);
  }
  std::uint32_t binary(ExprOp op, std::uint32_t lhs, std::uint32_t rhs, std::size_t pos) {
    ExprNode n;
    n.kind = ExprNode::Kind::kBinary;
    n.op = op;
    n.args = {lhs, rhs};
    n.position = pos;
    return add(std::move(n));
  }
  std::uint32_t unary(ExprOp op, std::uint32_t arg, std::size_t pos) {
    ExprNode n;
    n.kind = ExprNode::Kind::kUnary;
    n.op = op;
    n.args = {arg};
    n.position = pos;
    return add(std::move(n));
  }

  // An expression that may start with an outer set expression (§2.8).
  std::uint32_t parse_scope() {
    skip_space();
    if (peek('{')) {
      const std::size_t start = pos_;
      const std::uint32_t set = parse_set();
      const std::uint32_t inner = parse_or();
      ExprNode n;
      n.kind = ExprNode::Kind::kScoped;
      n.args = {set, inner};
      n.position = start;
      return add(std::move(n));
    }
    return parse_or();
  }

  std::uint32_t parse_or() {
    std::uint32_t lhs = parse_and();
    for (;;) {
      skip_space();
      const std::size_t at = pos_;
      if (accept_word("or")) {
        lhs = binary(ExprOp::kOr, lhs, parse_and(), at);
      } else if (accept_word("xor")) {
        lhs = binary(ExprOp::kXor, lhs, parse_and(), at);
      } else {
        return lhs;
      }
    }
  }
  std::uint32_t parse_and() {
    std::uint32_t lhs = parse_not();
    for (;;) {
      skip_space();
      const std::size_t at = pos_;
      if (!accept_word("and")) return lhs;
      lhs = binary(ExprOp::kAnd, lhs, parse_not(), at);
    }
  }
  std::uint32_t parse_not() {
    skip_space();
    const std::size_t at = pos_;
    if (accept_word("not")) {
      DepthGuard guard(*this, at);
      return unary(ExprOp::kNot, parse_not(), at);
    }
    return parse_comparison();
  }
  std::uint32_t parse_comparison() {
    std::uint32_t lhs = parse_concat();
    for (;;) {
      skip_space();
      const std::size_t at = pos_;
      ExprOp op;
      if (accept2("<>")) {
        op = ExprOp::kNe;
      } else if (accept2("<=")) {
        op = ExprOp::kLe;
      } else if (accept2(">=")) {
        op = ExprOp::kGe;
      } else if (accept('<')) {
        op = ExprOp::kLt;
      } else if (accept('>')) {
        op = ExprOp::kGt;
      } else if (accept('=')) {
        op = ExprOp::kEq;
      } else if (accept_word("like")) {
        op = ExprOp::kLike;
      } else if (accept_word("precedes")) {
        op = ExprOp::kPrecedes;
      } else if (accept_word("follows")) {
        op = ExprOp::kFollows;
      } else {
        return lhs;
      }
      lhs = binary(op, lhs, parse_concat(), at);
    }
  }
  std::uint32_t parse_concat() {
    std::uint32_t lhs = parse_sum();
    for (;;) {
      skip_space();
      const std::size_t at = pos_;
      if (!accept('&')) return lhs;
      lhs = binary(ExprOp::kConcat, lhs, parse_sum(), at);
    }
  }
  std::uint32_t parse_sum() {
    std::uint32_t lhs = parse_product();
    for (;;) {
      skip_space();
      const std::size_t at = pos_;
      if (accept('+')) {
        lhs = binary(ExprOp::kAdd, lhs, parse_product(), at);
      } else if (accept('-')) {
        lhs = binary(ExprOp::kSub, lhs, parse_product(), at);
      } else {
        return lhs;
      }
    }
  }
  std::uint32_t parse_product() {
    std::uint32_t lhs = parse_unary();
    for (;;) {
      skip_space();
      const std::size_t at = pos_;
      if (s_.compare(pos_, 2, "/*") != 0 && s_.compare(pos_, 2, "//") != 0 && accept('/')) {
        lhs = binary(ExprOp::kDiv, lhs, parse_unary(), at);
      } else if (accept('*')) {
        lhs = binary(ExprOp::kMul, lhs, parse_unary(), at);
      } else {
        return lhs;
      }
    }
  }
  std::uint32_t parse_unary() {
    skip_space();
    const std::size_t at = pos_;
    if (accept('-')) {
      DepthGuard guard(*this, at);
      return unary(ExprOp::kNeg, parse_unary(), at);
    }
    if (accept('+')) {
      DepthGuard guard(*this, at);
      return parse_unary();
    }
    return parse_primary();
  }

  std::uint32_t parse_primary() {
    skip_space();
    if (at_end()) fail(pos_, "expected a value, found the end");
    const std::size_t start = pos_;
    const char c = s_[pos_];
    if (c == '(') {
      DepthGuard guard(*this, start);
      ++pos_;
      const std::uint32_t inner = parse_scope();
      expect(')');
      return inner;
    }
    if (c == '\'') return constant(Value::of_text(parse_quoted('\'')), start);
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && pos_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_ + 1])))) {
      return parse_number();
    }
    if (c == '[' || c == '"' || c == '`') return field(parse_field(), start);
    if (c == '{') fail(pos_, "a set expression {…} must stand at the start of an aggregation or of a scope");
    if (!is_name_char(c)) fail(pos_, "unexpected '" + std::string(1, c) + "'");
    while (!at_end() && is_name_char(s_[pos_])) ++pos_;
    const std::string name = s_.substr(start, pos_ - start);
    skip_space();
    if (at_end() || s_[pos_] != '(') return field(name, start);
    DepthGuard guard(*this, start);
    ++pos_;
    if (const AggregateFunction* agg = find_aggregate_function(name)) return parse_aggregation(*agg, name, start);
    if (lower(name) == "aggr") return parse_aggr(name, start);
    if (const InterRecordFunction* ir = find_inter_record_function(name)) return parse_inter_record(*ir, name, start);
    const ScalarFunction* fn = find_scalar_function(name);
    // A state function is read by the object, which folds the call into a constant.
    const StateFunction* sf = fn == nullptr ? find_state_function(name) : nullptr;
    if (fn == nullptr && sf == nullptr) {
      if (is_planned_function(name)) fail(start, "function '" + name + "' is not yet supported");
      fail(start, "unknown function '" + name + "'");
    }
    ExprNode n;
    n.kind = ExprNode::Kind::kCall;
    n.name = name;
    n.position = start;
    if (!accept(')')) {
      do {
        n.args.push_back(parse_scope());
      } while (accept(','));
      expect(')');
    }
    const std::size_t lo = fn ? fn->min_args : sf->min_args, hi = fn ? fn->max_args : sf->max_args;
    if (n.args.size() < lo || (hi != 255 && n.args.size() > hi))
      fail(start, arity_text(fn ? fn->name : sf->name, lo, hi, n.args.size()));
    return add(std::move(n));
  }

  static std::string arity_text(const char* name, std::size_t lo, std::size_t hi, std::size_t got) {
    std::string want = lo == hi ? std::to_string(lo) : hi == 255 ? "at least " + std::to_string(lo)
                                                                 : std::to_string(lo) + " to " + std::to_string(hi);
    return std::string(name) + " takes " + want + " argument" + (lo == 1 && hi == 1 ? "" : "s") + ", not " +
           std::to_string(got);
  }

  // Func( [{set}] [DISTINCT|NODISTINCT] [TOTAL [<F, …>]] args ) after the '('.
  std::uint32_t parse_aggregation(const AggregateFunction& fn, const std::string& name, std::size_t start) {
    ExprNode n;
    n.kind = ExprNode::Kind::kAgg;
    n.name = name;
    n.position = start;
    skip_space();
    if (peek('{')) n.set = static_cast<std::int32_t>(parse_set());
    skip_space();
    const std::size_t distinct_at = pos_;
    if (accept_word("distinct")) {
      if (!fn.distinct_allowed) fail(distinct_at, std::string("'distinct' is not allowed in ") + fn.name);
      n.distinct = true;
    } else if (accept_word("nodistinct")) {
      n.nodistinct = true;
    }
    if (accept_word("total")) {
      n.total = true;
      if (accept('<')) {
        do {
          skip_space();
          n.total_positions.push_back(pos_);
          n.total_fields.push_back(parse_field());
        } while (accept(','));
        expect('>');
      }
    }
    skip_space();
    if (at_end() || s_[pos_] == ')') fail(pos_, "expected a field name");
    if (peek('*') && fn.star_allowed) {
      ExprNode star;
      star.kind = ExprNode::Kind::kStar;
      star.position = pos_;
      ++pos_;
      n.args.push_back(add(std::move(star)));
    } else {
      n.args.push_back(parse_or());
    }
    while (accept(',')) n.args.push_back(parse_or());
    expect(')');
    if (n.args.size() < fn.min_args || n.args.size() > fn.max_args)
      fail(start, arity_text(fn.name, fn.min_args, fn.max_args, n.args.size()));
    return add(std::move(n));
  }

  // Aggr( [{set}] [DISTINCT|NODISTINCT] expr, dim {, dim} ) after the '(', where a dimension
  // is a field or (field, (sort words)) as in Aggr(X, (Year, (NUMERIC, DESCENDING))).
  std::uint32_t parse_aggr(const std::string& name, std::size_t start) {
    ExprNode n;
    n.kind = ExprNode::Kind::kCall;
    n.name = name;
    n.position = start;
    skip_space();
    if (peek('{')) n.set = static_cast<std::int32_t>(parse_set());
    if (accept_word("distinct")) {
      n.distinct = true;
    } else if (accept_word("nodistinct")) {
      n.nodistinct = true;
    }
    skip_space();
    if (at_end() || s_[pos_] == ')') fail(pos_, "Aggr needs an expression and at least one dimension");
    n.args.push_back(parse_scope());
    while (accept(',')) {
      skip_space();
      const std::size_t at = pos_;
      if (accept('(')) {
        skip_space();
        const std::size_t field_at = pos_;
        std::string dim = parse_field();
        expect(',');
        expect('(');
        std::string words;
        do {
          skip_space();
          const std::size_t w = pos_;
          while (!at_end() && is_name_char(s_[pos_])) ++pos_;
          if (w == pos_) fail(pos_, "expected a sort word (NUMERIC, TEXT, LOAD_ORDER, ASCENDING, DESCENDING, …)");
          if (!words.empty()) words += ' ';
          words += s_.substr(w, pos_ - w);
        } while (accept(','));
        expect(')');
        expect(')');
        const std::uint32_t f = field(std::move(dim), field_at);
        e_.nodes[f].sort = std::move(words);
        n.args.push_back(f);
        continue;
      }
      std::string dim = parse_field();
      n.args.push_back(field(std::move(dim), at));
    }
    expect(')');
    if (n.args.size() < 2) fail(start, "Aggr needs an expression and at least one dimension");
    return add(std::move(n));
  }

  // Above([TOTAL] e [, offset [, count]]), RowNo([TOTAL]), Rank([TOTAL] e [, mode [, fmt]]), …
  std::uint32_t parse_inter_record(const InterRecordFunction& fn, const std::string& name, std::size_t start) {
    ExprNode n;
    n.kind = ExprNode::Kind::kCall;
    n.name = name;
    n.position = start;
    const std::size_t total_at = pos_;
    if (accept_word("total")) {
      if (!fn.total_allowed) fail(total_at, std::string("'total' is not allowed in ") + fn.name);
      n.total = true;
    }
    if (!accept(')')) {
      do {
        n.args.push_back(parse_scope());
      } while (accept(','));
      expect(')');
    }
    if (n.args.size() < fn.min_args || n.args.size() > fn.max_args)
      fail(start, arity_text(fn.name, fn.min_args, fn.max_args, n.args.size()));
    return add(std::move(n));
  }

  // A set expression from '{' to its matching '}', quotes and brackets respected (§2.1).
  std::uint32_t parse_set() {
    skip_space();
    const std::size_t start = pos_;
    ++pos_;  // '{'
    std::size_t depth = 1;
    while (depth > 0) {
      if (at_end()) fail(start, "unclosed '{'");
      const char c = s_[pos_];
      if (c == '\'' || c == '"' || c == '`') {
        parse_quoted(c);
        continue;
      }
      if (c == '[') {
        const std::size_t close = s_.find(']', pos_ + 1);
        if (close == std::string::npos) fail(pos_, "unclosed '['");
        pos_ = close + 1;
        continue;
      }
      if (c == '{') {
        if (++depth > kMaxExpressionDepth)
          fail(pos_, "expression nested deeper than " + std::to_string(kMaxExpressionDepth) + " levels");
      }
      if (c == '}') --depth;
      ++pos_;
    }
    ExprNode n;
    n.kind = ExprNode::Kind::kSet;
    n.name = s_.substr(start + 1, pos_ - start - 2);
    n.position = start;
    return add(std::move(n));
  }

  // A quoted text from its opening quote; a doubled quote stands for one.
  std::string parse_quoted(char quote) {
    const std::size_t start = pos_;
    ++pos_;
    std::string out;
    for (;;) {
      if (at_end()) fail(start, std::string("unclosed ") + quote);
      if (s_[pos_] == quote) {
        if (pos_ + 1 < s_.size() && s_[pos_ + 1] == quote) {
          out += quote;
          pos_ += 2;
          continue;
        }
        ++pos_;
        return out;
      }
      out += s_[pos_++];
    }
  }

  std::string parse_field() {
    skip_space();
    if (at_end()) fail(pos_, "expected a field name, found the end");
    const char c = s_[pos_];
    if (c == '[') {
      const std::size_t close = s_.find(']', pos_ + 1);
      if (close == std::string::npos) fail(pos_, "unclosed '['");
      std::string name = s_.substr(pos_ + 1, close - pos_ - 1);
      if (name.empty()) fail(pos_, "empty field name");
      pos_ = close + 1;
      return name;
    }
    if (c == '"' || c == '`') {
      const std::size_t at = pos_;
      std::string name = parse_quoted(c);
      if (name.empty()) fail(at, "empty field name");
      return name;
    }
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(s_[pos_])) ++pos_;
    if (pos_ == start) fail(pos_, "expected a field name");
    return s_.substr(start, pos_ - start);
  }

  std::uint32_t field(std::string name, std::size_t pos) {
    ExprNode n;
    n.kind = ExprNode::Kind::kField;
    n.name = std::move(name);
    n.position = pos;
    return add(std::move(n));
  }
  std::uint32_t constant(Value v, std::size_t pos) {
    ExprNode n;
    n.kind = ExprNode::Kind::kConst;
    n.value = std::move(v);
    n.position = pos;
    return add(std::move(n));
  }

  std::uint32_t parse_number() {
    const std::size_t start = pos_;
    while (!at_end() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) ++pos_;
    if (!at_end() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      std::size_t p = pos_ + 1;
      if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
      if (p < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p]))) {
        pos_ = p;
        while (!at_end() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      }
    }
    const std::string text = s_.substr(start, pos_ - start);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) fail(start, "malformed number '" + text + "'");
    if (!at_end() && is_name_char(s_[pos_])) fail(pos_, "unexpected '" + std::string(1, s_[pos_]) + "' after a number");
    return constant(Value::number(v), start);
  }

  const std::string& s_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
  std::vector<std::size_t> tree_depth_;
  Expression e_;
};

}  // namespace

const char* op_name(ExprOp op) {
  switch (op) {
    case ExprOp::kNeg: return "-";
    case ExprOp::kNot: return "not";
    case ExprOp::kMul: return "*";
    case ExprOp::kDiv: return "/";
    case ExprOp::kAdd: return "+";
    case ExprOp::kSub: return "-";
    case ExprOp::kConcat: return "&";
    case ExprOp::kEq: return "=";
    case ExprOp::kNe: return "<>";
    case ExprOp::kLt: return "<";
    case ExprOp::kLe: return "<=";
    case ExprOp::kGt: return ">";
    case ExprOp::kGe: return ">=";
    case ExprOp::kLike: return "like";
    case ExprOp::kPrecedes: return "precedes";
    case ExprOp::kFollows: return "follows";
    case ExprOp::kAnd: return "and";
    case ExprOp::kOr: return "or";
    case ExprOp::kXor: return "xor";
  }
  return "?";
}

Expression parse_expression(const std::string& text) { return Parser(text).run(); }

}  // namespace assoc
