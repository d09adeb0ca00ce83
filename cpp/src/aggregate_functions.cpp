// The aggregation bodies of the function library (spec chart-expressions §3): one function
// over a group's values, used by hypercube measures, Aggr and script GROUP BY alike.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "assoc/functions.hpp"

namespace assoc {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Value number(double v) { return Value::number(v); }
double num(const Value& v) { return numeric_of(v); }
bool integral(double x) { return std::isfinite(x) && x == std::floor(x); }

// Sorted values: numbers ascending.
std::vector<double> numbers_sorted(std::span<const Value> values) {
  std::vector<double> out;
  for (const Value& v : values)
    if (v.has_number()) out.push_back(v.num);
  std::sort(out.begin(), out.end());
  return out;
}

Value fractile(std::span<const Value> values, double f) {
  if (std::isnan(f) || f < 0 || f > 1) return Value::null();
  const std::vector<double> xs = numbers_sorted(values);
  if (xs.empty()) return Value::null();
  const double r = f * static_cast<double>(xs.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(r));
  const std::size_t hi = std::min(lo + 1, xs.size() - 1);
  return number(xs[lo] + (r - static_cast<double>(lo)) * (xs[hi] - xs[lo]));
}

// Excel PERCENTILE.EXC: rank r = f·(N+1) from 1, linear interpolation; NULL outside [1, N].
Value fractile_exc(std::span<const Value> values, double f) {
  if (std::isnan(f)) return Value::null();
  const std::vector<double> xs = numbers_sorted(values);
  const double r = f * static_cast<double>(xs.size() + 1);
  if (xs.empty() || r < 1 || r > static_cast<double>(xs.size())) return Value::null();
  const auto lo = static_cast<std::size_t>(std::floor(r));  // 1-based
  const std::size_t hi = std::min(lo + 1, xs.size());
  return number(xs[lo - 1] + (r - static_cast<double>(lo)) * (xs[hi - 1] - xs[lo - 1]));
}

// Excel SKEW (adjusted Fisher-Pearson) and KURT (excess, sample-adjusted) of the numbers:
// NULL with too few values (3 and 4) or no spread.
Value moment(std::span<const Value> values, bool kurtosis) {
  const std::vector<double> xs = numbers_sorted(values);
  const double n = static_cast<double>(xs.size());
  if (n < (kurtosis ? 4 : 3)) return Value::null();
  const double mean = std::accumulate(xs.begin(), xs.end(), 0.0) / n;
  double ss = 0;
  for (const double x : xs) ss += (x - mean) * (x - mean);
  const double s = std::sqrt(ss / (n - 1));
  if (!(s > 0)) return Value::null();
  double sum = 0;
  for (const double x : xs) sum += std::pow((x - mean) / s, kurtosis ? 4 : 3);
  if (!kurtosis) return number(n / ((n - 1) * (n - 2)) * sum);
  return number(n * (n + 1) / ((n - 1) * (n - 2) * (n - 3)) * sum - 3 * (n - 1) * (n - 1) / ((n - 2) * (n - 3)));
}

// Values as distinct ones, first occurrence kept, in load order.
std::vector<Value> distinct_of(std::span<const Value> values) {
  std::vector<Value> out;
  std::map<double, bool> numbers;
  std::map<std::string, bool> texts;
  for (const Value& v : values) {
    if (v.is_null()) continue;
    const bool added = v.has_number() ? numbers.emplace(v.num, true).second : texts.emplace(v.text, true).second;
    if (added) out.push_back(v);
  }
  return out;
}

}  // namespace

Value empty_aggregate(AggKind kind) {
  switch (kind) {
    case AggKind::kSum:
    case AggKind::kCount:
    case AggKind::kNullCount:
    case AggKind::kMissingCount:
    case AggKind::kNumericCount:
    case AggKind::kTextCount: return number(0);
    default: return Value::null();
  }
}

Value aggregate_values(AggKind kind, bool distinct, std::span<const Value> values, std::span<const Value> weights,
                       std::span<const Value> params) {
  std::vector<Value> unique;
  if (distinct && kind != AggKind::kConcat && kind != AggKind::kFirstSortedValue && kind != AggKind::kNullCount &&
      kind != AggKind::kMissingCount) {
    unique = distinct_of(values);
    values = unique;
  }
  const double p1 = params.size() > 1 ? num(params[1]) : kNaN;
  switch (kind) {
    case AggKind::kSum: {
      double s = 0;
      for (const Value& v : values) s += v.has_number() ? v.num : 0;
      return number(s);
    }
    case AggKind::kCount: {
      double n = 0;
      for (const Value& v : values) n += v.is_null() ? 0 : 1;
      return number(n);
    }
    case AggKind::kAvg: {
      double s = 0, n = 0;
      for (const Value& v : values)
        if (v.has_number()) s += v.num, n += 1;
      return n > 0 ? number(s / n) : Value::null();
    }
    case AggKind::kMin:
    case AggKind::kMax: {
      const std::vector<double> xs = numbers_sorted(values);
      const double rank = params.size() > 1 ? p1 : 1;
      if (!integral(rank) || rank < 1 || rank > static_cast<double>(xs.size())) return Value::null();
      const auto k = static_cast<std::size_t>(rank) - 1;
      return number(kind == AggKind::kMin ? xs[k] : xs[xs.size() - 1 - k]);
    }
    case AggKind::kOnly: {
      const Value* one = nullptr;
      for (const Value& v : values) {
        if (v.is_null()) continue;
        if (one == nullptr) {
          one = &v;
        } else if (!same_value(*one, v)) {
          return Value::null();
        }
      }
      return one ? *one : Value::null();
    }
    case AggKind::kMinString:
    case AggKind::kMaxString: {
      // Text sort order: numbers first (ascending), then texts in code-point order.
      const Value* best = nullptr;
      auto before = [](const Value& x, const Value& y) {
        if (x.has_number() != y.has_number()) return x.has_number();
        if (x.has_number()) return x.num < y.num;
        return x.text < y.text;
      };
      for (const Value& v : values) {
        if (v.is_null()) continue;
        if (best == nullptr || (kind == AggKind::kMinString ? before(v, *best) : before(*best, v))) best = &v;
      }
      return best ? *best : Value::null();
    }
    case AggKind::kMode: {
      std::vector<Value> keys = distinct_of(values);
      if (keys.empty()) return Value::null();
      std::vector<std::size_t> counts(keys.size(), 0);
      for (const Value& v : values)
        for (std::size_t k = 0; k < keys.size(); ++k)
          if (!v.is_null() && same_value(keys[k], v)) {
            ++counts[k];
            break;
          }
      const std::size_t top = *std::max_element(counts.begin(), counts.end());
      if (std::count(counts.begin(), counts.end(), top) > 1) return Value::null();
      return keys[static_cast<std::size_t>(std::max_element(counts.begin(), counts.end()) - counts.begin())];
    }
    case AggKind::kMedian: return fractile(values, 0.5);
    case AggKind::kFractile: return fractile(values, p1);
    case AggKind::kFractileExc: return fractile_exc(values, p1);
    case AggKind::kSkew: return moment(values, false);
    case AggKind::kKurtosis: return moment(values, true);
    case AggKind::kStdev:
    case AggKind::kVar: {
      const std::vector<double> xs = numbers_sorted(values);
      if (xs.size() < 2) return Value::null();
      const double mean = std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
      double ss = 0;
      for (const double x : xs) ss += (x - mean) * (x - mean);
      const double var = ss / static_cast<double>(xs.size() - 1);
      return number(kind == AggKind::kVar ? var : std::sqrt(var));
    }
    case AggKind::kNullCount:
    case AggKind::kMissingCount:
    case AggKind::kNumericCount:
    case AggKind::kTextCount: {
      if (distinct) unique = distinct_of(values);
      double n = 0;
      for (const Value& v : values) {
        if (kind == AggKind::kNullCount) n += v.is_null() ? 1 : 0;
        if (kind == AggKind::kMissingCount) n += v.has_number() ? 0 : 1;
        if (kind == AggKind::kNumericCount) n += v.has_number() ? 1 : 0;
        if (kind == AggKind::kTextCount) n += !v.is_null() && !v.has_number() ? 1 : 0;
      }
      if (distinct && (kind == AggKind::kNullCount || kind == AggKind::kMissingCount)) {
        // DISTINCT counts each distinct value once; all NULLs are one.
        double d = 0;
        bool null_seen = false;
        for (const Value& v : values) null_seen = null_seen || v.is_null();
        for (const Value& v : unique) d += kind == AggKind::kMissingCount && !v.has_number() ? 1 : 0;
        return number(d + (null_seen ? 1 : 0));
      }
      return number(n);
    }
    case AggKind::kConcat: {
      const std::string delimiter = params.size() > 1 ? shown_text(params[1]) : "";
      std::vector<std::size_t> order;
      for (std::size_t i = 0; i < values.size(); ++i)
        if (!values[i].is_null()) order.push_back(i);
      if (order.empty()) return Value::null();
      if (weights.empty()) {
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return shown_text(values[a]) < shown_text(values[b]); });
      } else {
        // Ascending weight; NULL weights last; equal weights (w = 0 everywhere) keep load order.
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
          const double x = weights[a].num, y = weights[b].num;
          if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
          return x < y;
        });
      }
      std::string out;
      std::vector<std::string> seen;
      bool first = true;
      for (const std::size_t i : order) {
        const std::string t = shown_text(values[i]);
        if (distinct) {
          if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
          seen.push_back(t);
        }
        if (!first) out += delimiter;
        out += t;
        first = false;
      }
      return Value::of_text(out);
    }
    case AggKind::kFirstSortedValue: {
      std::vector<std::size_t> order;
      for (std::size_t i = 0; i < values.size(); ++i)
        if (i < weights.size() && !std::isnan(weights[i].num) && !values[i].is_null()) order.push_back(i);
      if (distinct) {
        std::vector<std::size_t> kept;
        for (const std::size_t i : order) {
          bool dup = false;
          for (const std::size_t j : kept)
            dup = dup || (same_value(values[i], values[j]) && weights[i].num == weights[j].num);
          if (!dup) kept.push_back(i);
        }
        order.swap(kept);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return weights[a].num < weights[b].num; });
      const double rank = params.size() > 2 ? num(params[2]) : 1;
      if (!integral(rank) || rank < 1 || rank > static_cast<double>(order.size())) return Value::null();
      const std::size_t k = order[static_cast<std::size_t>(rank) - 1];
      const double w = weights[k].num;
      std::size_t same = 0;
      for (const std::size_t i : order) same += weights[i].num == w ? 1 : 0;
      return same > 1 ? Value::null() : values[k];
    }
  }
  return Value::null();
}

}  // namespace assoc
