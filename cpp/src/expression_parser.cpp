#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "assoc/error.hpp"
#include "assoc/expression.hpp"

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

// Recursive descent, each parenthesis or sign one level deeper, at most kMaxExpressionDepth:
// sum := product (('+'|'-') product)*; product := unary (('*'|'/') unary)*;
// unary := ('-'|'+') unary | primary; primary := number | '(' sum ')' | name '(' [distinct] field ')' | field.
class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) { e_.text = text; }

  Expression run() {
    skip_space();
    if (at_end()) fail(pos_, "empty expression");
    parse_sum();
    skip_space();
    if (!at_end()) fail(pos_, "unexpected '" + std::string(1, s_[pos_]) + "'");
    return std::move(e_);
  }

 private:
  [[noreturn]] void fail(std::size_t pos, const std::string& what) const {
    // A long expression is named by its start: the message stays readable (and small).
    const std::string shown = s_.size() <= kShownChars ? s_ : s_.substr(0, kShownChars) + "...";
    throw Error("expression '" + shown + "': " + what + " at position " + std::to_string(pos));
  }
  static constexpr std::size_t kShownChars = 200;
  bool at_end() const { return pos_ >= s_.size(); }
  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (!at_end() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(pos_, at_end() ? std::string("expected '") + c + "', found the end"
                                        : std::string("expected '") + c + "'");
  }
  std::uint32_t add(Expression::Node n) {
    e_.nodes.push_back(n);
    return static_cast<std::uint32_t>(e_.nodes.size() - 1);
  }
  std::uint32_t binary(Expression::Op op, std::uint32_t lhs, std::uint32_t rhs) {
    Expression::Node n;
    n.op = op;
    n.lhs = lhs;
    n.rhs = rhs;
    return add(n);
  }

  std::uint32_t parse_sum() {
    std::uint32_t lhs = parse_product();
    for (;;) {
      if (accept('+')) {
        lhs = binary(Expression::Op::kAdd, lhs, parse_product());
      } else if (accept('-')) {
        lhs = binary(Expression::Op::kSub, lhs, parse_product());
      } else {
        return lhs;
      }
    }
  }
  std::uint32_t parse_product() {
    std::uint32_t lhs = parse_unary();
    for (;;) {
      if (accept('*')) {
        lhs = binary(Expression::Op::kMul, lhs, parse_unary());
      } else if (accept('/')) {
        lhs = binary(Expression::Op::kDiv, lhs, parse_unary());
      } else {
        return lhs;
      }
    }
  }
  // One level deeper (a parenthesis or a sign about to be parsed): the bound keeps the stack
  // a few hundred kilobytes deep at most.
  void descend() {
    if (depth_ >= kMaxExpressionDepth)
      fail(pos_ - 1, "parentheses and signs nested deeper than " + std::to_string(kMaxExpressionDepth) +
                         " levels");
    ++depth_;
  }
  std::uint32_t parse_unary() {
    if (accept('-')) {
      descend();
      Expression::Node n;
      n.op = Expression::Op::kNeg;
      n.lhs = parse_unary();
      --depth_;
      return add(n);
    }
    if (accept('+')) {
      descend();
      const std::uint32_t operand = parse_unary();
      --depth_;
      return operand;
    }
    return parse_primary();
  }

  std::uint32_t parse_primary() {
    skip_space();
    if (at_end()) fail(pos_, "expected a value, found the end");
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      descend();
      const std::uint32_t inner = parse_sum();
      expect(')');
      --depth_;
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && pos_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_ + 1])))) {
      return parse_number();
    }
    if (c == '[') return aggregation(AggFunc::kOnly, parse_field());
    if (!is_name_char(c)) fail(pos_, "unexpected '" + std::string(1, c) + "'");
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(s_[pos_])) ++pos_;
    const std::string name = s_.substr(start, pos_ - start);
    skip_space();
    if (at_end() || s_[pos_] != '(') {
      pos_ = start;
      return aggregation(AggFunc::kOnly, parse_field());
    }
    ++pos_;
    const std::string fn = lower(name);
    AggFunc f;
    if (fn == "sum") {
      f = AggFunc::kSum;
    } else if (fn == "count") {
      f = AggFunc::kCount;
    } else if (fn == "avg") {
      f = AggFunc::kAvg;
    } else if (fn == "min") {
      f = AggFunc::kMin;
    } else if (fn == "max") {
      f = AggFunc::kMax;
    } else if (fn == "only") {
      f = AggFunc::kOnly;
    } else {
      fail(start, "unknown function '" + name + "'");
    }
    skip_space();
    if (distinct_follows()) {
      if (f != AggFunc::kCount) fail(pos_, "'distinct' is only allowed in Count");
      pos_ += 8;
      f = AggFunc::kCountDistinct;
    }
    skip_space();
    if (at_end() || s_[pos_] == ')') fail(pos_, "expected a field name");
    AggCall call = parse_field();
    expect(')');
    return aggregation(f, std::move(call));
  }

  // "distinct" followed by a space or a bracket (so a field named Distinct… still reads as one).
  bool distinct_follows() const {
    if (s_.size() - pos_ < 9 || lower(std::string_view(s_).substr(pos_, 8)) != "distinct") return false;
    const char next = s_[pos_ + 8];
    return std::isspace(static_cast<unsigned char>(next)) || next == '[';
  }

  AggCall parse_field() {
    skip_space();
    AggCall call;
    call.position = pos_;
    if (at_end()) fail(pos_, "expected a field name, found the end");
    if (s_[pos_] == '[') {
      const std::size_t close = s_.find(']', pos_ + 1);
      if (close == std::string::npos) fail(pos_, "unclosed '['");
      call.field = s_.substr(pos_ + 1, close - pos_ - 1);
      if (call.field.empty()) fail(pos_, "empty field name");
      pos_ = close + 1;
      return call;
    }
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(s_[pos_])) ++pos_;
    if (pos_ == start) fail(pos_, "expected a field name");
    call.field = s_.substr(start, pos_ - start);
    return call;
  }

  std::uint32_t aggregation(AggFunc f, AggCall call) {
    call.func = f;
    e_.aggs.push_back(std::move(call));
    Expression::Node n;
    n.op = Expression::Op::kAgg;
    n.agg = static_cast<std::uint32_t>(e_.aggs.size() - 1);
    return add(n);
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
    Expression::Node n;
    n.op = Expression::Op::kConst;
    n.value = v;
    return add(n);
  }

  const std::string& s_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
  Expression e_;
};

}  // namespace

const char* agg_name(AggFunc f) {
  switch (f) {
    case AggFunc::kSum: return "Sum";
    case AggFunc::kCount: return "Count";
    case AggFunc::kCountDistinct: return "Count(distinct)";
    case AggFunc::kAvg: return "Avg";
    case AggFunc::kMin: return "Min";
    case AggFunc::kMax: return "Max";
    case AggFunc::kOnly: return "Only";
  }
  return "?";
}

Expression parse_expression(const std::string& text) { return Parser(text).run(); }

std::vector<double> evaluate_expression(const Expression& e, const std::vector<const double*>& agg_values,
                                        std::size_t n) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::vector<double>> values(e.nodes.size());
  for (std::size_t i = 0; i < e.nodes.size(); ++i) {
    const Expression::Node& node = e.nodes[i];
    std::vector<double>& out = values[i];
    out.resize(n);
    if (node.op == Expression::Op::kConst) {
      std::fill(out.begin(), out.end(), node.value);
    } else if (node.op == Expression::Op::kAgg) {
      out.assign(agg_values[node.agg], agg_values[node.agg] + n);
    } else if (node.op == Expression::Op::kNeg) {
      for (std::size_t r = 0; r < n; ++r) out[r] = -values[node.lhs][r];
    } else {
      const std::vector<double>& a = values[node.lhs];
      const std::vector<double>& b = values[node.rhs];
      for (std::size_t r = 0; r < n; ++r) {
        switch (node.op) {
          case Expression::Op::kAdd: out[r] = a[r] + b[r]; break;
          case Expression::Op::kSub: out[r] = a[r] - b[r]; break;
          case Expression::Op::kMul: out[r] = a[r] * b[r]; break;
          default: out[r] = b[r] == 0 ? kNaN : a[r] / b[r]; break;
        }
      }
      std::vector<double>().swap(values[node.rhs]);
    }
    // Each node has one parent: its operands' rows are done with, so only the values still
    // waiting for a parent are held (a long flat sum holds two, not one per term).
    if (node.op != Expression::Op::kConst && node.op != Expression::Op::kAgg)
      std::vector<double>().swap(values[node.lhs]);
  }
  return std::move(values.back());
}

}  // namespace assoc
