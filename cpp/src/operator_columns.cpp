// Operators over columns of values (a load script's expressions): the same apply_unary and
// apply_binary the charts evaluate, with the rows whose operands are plain numbers computed in
// tight loops that give what those functions give.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>

#include "assoc/functions.hpp"
#include "assoc/number_text.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_arithmetic(ExprOp op) {
  return op == ExprOp::kAdd || op == ExprOp::kSub || op == ExprOp::kMul || op == ExprOp::kDiv;
}
bool is_logical(ExprOp op) { return op == ExprOp::kAnd || op == ExprOp::kOr || op == ExprOp::kXor; }
bool is_ordering(ExprOp op) {
  return op == ExprOp::kEq || op == ExprOp::kNe || op == ExprOp::kLt || op == ExprOp::kLe || op == ExprOp::kGt ||
         op == ExprOp::kGe;
}

std::size_t at(const OperandColumn& c, std::size_t row) { return c.count == 1 ? 0 : row; }

double finite_or_nan(double v) { return std::isfinite(v) ? v : kNaN; }
double truth(bool b) { return b ? -1.0 : 0.0; }

bool has_text(const OperandColumn& c, std::size_t i) { return c.texts != nullptr && c.has_text[i] != 0; }

void fill(const OperandColumn& c, std::size_t row, Value& v) {
  const std::size_t i = at(c, row);
  const double x = c.nums[i];
  v.num = std::isfinite(x) ? x : kNaN;
  v.has_text = has_text(c, i);
  if (v.has_text) {
    v.text.assign(c.texts[i]);
  } else {
    v.text.clear();
  }
}

// Each value's number as Interpretation::number reads it, for a column with texts (a text
// read once per distinct text of a chunk while texts repeat, as the dates of a calendar do).
// A column without texts is its own numbers: `nums` is returned and `read` left empty.
const double* numbers_of(const OperandColumn& c, const Interpretation& ix, std::vector<double>& read) {
  if (c.texts == nullptr) return c.nums;
  read.resize(c.count);
  parallel_ranges(c.count, 64, [&](std::size_t b, std::size_t e) {
    std::unordered_map<std::string_view, double> seen;
    bool caching = true;
    std::size_t looks = 0, misses = 0;
    for (std::size_t i = b; i < e; ++i) {
      double x = finite_or_nan(c.nums[i]);
      if (std::isnan(x) && has_text(c, i)) {
        if (!caching) {
          x = ix.read(c.texts[i]);
        } else if (const auto it = seen.find(c.texts[i]); it != seen.end()) {
          x = it->second;
        } else {
          x = ix.read(c.texts[i]);
          seen.emplace(c.texts[i], x);
          ++misses;
        }
        // Texts that barely repeat (names, ids) are not worth remembering.
        if (caching && ++looks == 1024 && misses * 4 > looks * 3) {
          caching = false;
          seen = {};
        }
      }
      read[i] = x;
    }
  });
  return read.data();
}

// shown_text of value i, appended to `out`; false for NULL.
bool append_shown(const OperandColumn& c, std::size_t i, std::string& out) {
  if (has_text(c, i)) {
    out.append(c.texts[i]);
    return true;
  }
  const double x = finite_or_nan(c.nums[i]);
  if (std::isnan(x)) return false;
  out += format_number(x);
  return true;
}

// apply_binary's `&` on each row (NULL & NULL is NULL, else shown_text(a) + shown_text(b)),
// the texts written one after another into one buffer per chunk of rows, then joined.
OperatorTexts concat_columns(const OperandColumn& a, const OperandColumn& b, std::size_t n, double* o) {
  OperatorTexts out;
  out.has_text.assign(n, 0);
  out.ends.resize(n);
  const std::size_t chunks = std::clamp<std::size_t>(n / 16384, 1, 16);
  std::vector<std::string> parts(chunks);
  parallel_ranges(chunks, 1, [&](std::size_t cb, std::size_t ce) {
    for (std::size_t k = cb; k < ce; ++k) {
      std::string& chars = parts[k];
      const std::size_t begin = n * k / chunks, end = n * (k + 1) / chunks;
      for (std::size_t r = begin; r < end; ++r) {
        o[r] = kNaN;
        const bool left = append_shown(a, at(a, r), chars);
        const bool right = append_shown(b, at(b, r), chars);
        out.has_text[r] = left || right;
        out.ends[r] = chars.size();  // within the chunk; made absolute below
      }
    }
  }, nullptr, 1);
  std::size_t total = 0;
  for (const std::string& p : parts) total += p.size();
  out.chars.resize(total);
  std::size_t base = 0;
  for (std::size_t k = 0; k < chunks; ++k) {
    std::memcpy(out.chars.data() + base, parts[k].data(), parts[k].size());
    for (std::size_t r = n * k / chunks, end = n * (k + 1) / chunks; r < end; ++r) out.ends[r] += base;
    base += parts[k].size();
    parts[k] = {};
  }
  return out;
}

}  // namespace

bool operator_of(std::string_view name, std::size_t arity, ExprOp& op) {
  std::string n(name);
  for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (arity == 1) {
    if (n == "-") op = ExprOp::kNeg;
    else if (n == "not") op = ExprOp::kNot;
    else return false;
    return true;
  }
  if (arity != 2) return false;
  static const std::unordered_map<std::string, ExprOp> binary = {
      {"*", ExprOp::kMul}, {"/", ExprOp::kDiv},  {"+", ExprOp::kAdd},        {"-", ExprOp::kSub},
      {"&", ExprOp::kConcat}, {"=", ExprOp::kEq}, {"<>", ExprOp::kNe},       {"<", ExprOp::kLt},
      {"<=", ExprOp::kLe}, {">", ExprOp::kGt},  {">=", ExprOp::kGe},        {"like", ExprOp::kLike},
      {"precedes", ExprOp::kPrecedes}, {"follows", ExprOp::kFollows}, {"and", ExprOp::kAnd},
      {"or", ExprOp::kOr}, {"xor", ExprOp::kXor},
  };
  const auto it = binary.find(n);
  if (it == binary.end()) return false;
  op = it->second;
  return true;
}

OperatorTexts apply_operator(ExprOp op, std::span<const OperandColumn> operands, std::size_t n,
                             const Interpretation& ix, double* o) {
  OperatorTexts out;
  std::vector<double> read_a, read_b;
  if (operands.size() == 1) {
    const OperandColumn& a = operands[0];
    const double* x = numbers_of(a, ix, read_a);
    parallel_ranges(n, 64, [&](std::size_t b, std::size_t e) {
      for (std::size_t r = b; r < e; ++r) {
        const double v = finite_or_nan(x[at(a, r)]);
        o[r] = op == ExprOp::kNot ? truth(std::isnan(v) || v == 0) : std::isnan(v) ? kNaN : -v;
      }
    });
    return out;
  }
  const OperandColumn& a = operands[0];
  const OperandColumn& b = operands[1];
  if (is_arithmetic(op) || is_logical(op) || is_ordering(op)) {
    const double* x = numbers_of(a, ix, read_a);
    const double* y = numbers_of(b, ix, read_b);
    const std::size_t sa = a.count == 1 ? 0 : 1, sb = b.count == 1 ? 0 : 1;
    // f on each row's two numbers, the operator chosen once outside the loop.
    const auto numbers = [&](auto f) {
      parallel_ranges(n, 64, [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) o[r] = f(finite_or_nan(x[r * sa]), finite_or_nan(y[r * sb]));
      });
    };
    // A comparison of two numbers; a row without both goes through apply_binary.
    const auto compare = [&](auto holds) {
      parallel_ranges(n, 64, [&](std::size_t begin, std::size_t end) {
        Value va, vb;
        for (std::size_t r = begin; r < end; ++r) {
          const double p = finite_or_nan(x[r * sa]), q = finite_or_nan(y[r * sb]);
          if (std::isnan(p) || std::isnan(q)) {
            fill(a, r, va);
            fill(b, r, vb);
            o[r] = apply_binary(op, va, vb, ix).num;
          } else {
            o[r] = truth(holds(p, q));
          }
        }
      });
    };
    const auto is = [](double v) { return !std::isnan(v) && v != 0; };
    switch (op) {
      case ExprOp::kAdd: numbers([](double p, double q) { return finite_or_nan(p + q); }); break;
      case ExprOp::kSub: numbers([](double p, double q) { return finite_or_nan(p - q); }); break;
      case ExprOp::kMul: numbers([](double p, double q) { return finite_or_nan(p * q); }); break;
      case ExprOp::kDiv: numbers([](double p, double q) { return q == 0 ? kNaN : finite_or_nan(p / q); }); break;
      case ExprOp::kAnd: numbers([&](double p, double q) { return truth(is(p) && is(q)); }); break;
      case ExprOp::kOr: numbers([&](double p, double q) { return truth(is(p) || is(q)); }); break;
      case ExprOp::kXor: numbers([&](double p, double q) { return truth(is(p) != is(q)); }); break;
      case ExprOp::kEq: compare([](double p, double q) { return p == q; }); break;
      case ExprOp::kNe: compare([](double p, double q) { return p != q; }); break;
      case ExprOp::kLt: compare([](double p, double q) { return p < q; }); break;
      case ExprOp::kLe: compare([](double p, double q) { return p <= q; }); break;
      case ExprOp::kGt: compare([](double p, double q) { return p > q; }); break;
      default: compare([](double p, double q) { return p >= q; }); break;
    }
    return out;
  }
  if (op == ExprOp::kConcat) return concat_columns(a, b, n, o);
  // like, precedes, follows: every row through apply_binary.
  parallel_ranges(n, 64, [&](std::size_t begin, std::size_t end) {
    Value va, vb;
    for (std::size_t r = begin; r < end; ++r) {
      fill(a, r, va);
      fill(b, r, vb);
      o[r] = apply_binary(op, va, vb, ix).num;
    }
  });
  return out;
}

}  // namespace assoc
