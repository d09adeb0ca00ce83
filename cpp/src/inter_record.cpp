#include "assoc/inter_record.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <cstdio>

namespace assoc {
namespace {

const InterRecordFunction kFunctions[] = {
    {"Above", InterRecordKind::kAbove, 1, 3, true},       {"Below", InterRecordKind::kBelow, 1, 3, true},
    {"Top", InterRecordKind::kTop, 1, 3, true},           {"Bottom", InterRecordKind::kBottom, 1, 3, true},
    {"RowNo", InterRecordKind::kRowNo, 0, 0, true},       {"NoOfRows", InterRecordKind::kNoOfRows, 0, 0, true},
    {"Column", InterRecordKind::kColumn, 1, 1, false},    {"Rank", InterRecordKind::kRank, 1, 3, true},
    {"HRank", InterRecordKind::kHRank, 1, 3, true},       {"Before", InterRecordKind::kBefore, 1, 3, true},
    {"After", InterRecordKind::kAfter, 1, 3, true},       {"First", InterRecordKind::kFirst, 1, 3, true},
    {"Last", InterRecordKind::kLast, 1, 3, true},         {"ColumnNo", InterRecordKind::kColumnNo, 0, 0, true},
    {"NoOfColumns", InterRecordKind::kNoOfColumns, 0, 0, true},
};

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", x);
  return buf;
}

}  // namespace

bool is_horizontal(InterRecordKind kind) {
  switch (kind) {
    case InterRecordKind::kHRank:
    case InterRecordKind::kBefore:
    case InterRecordKind::kAfter:
    case InterRecordKind::kFirst:
    case InterRecordKind::kLast:
    case InterRecordKind::kColumnNo:
    case InterRecordKind::kNoOfColumns: return true;
    default: return false;
  }
}

bool is_shift(InterRecordKind kind) {
  switch (kind) {
    case InterRecordKind::kAbove:
    case InterRecordKind::kBelow:
    case InterRecordKind::kTop:
    case InterRecordKind::kBottom:
    case InterRecordKind::kBefore:
    case InterRecordKind::kAfter:
    case InterRecordKind::kFirst:
    case InterRecordKind::kLast: return true;
    default: return false;
  }
}

const InterRecordFunction* find_inter_record_function(std::string_view name) {
  for (const InterRecordFunction& f : kFunctions) {
    const std::string_view n = f.name;
    if (n.size() == name.size() &&
        std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return &f;
  }
  return nullptr;
}

void rank_segment(const double* values, std::size_t n, int mode, int fmt, double* rank_out, std::string* text_out,
                  std::uint8_t* has_text) {
  // Rows with a value, highest first; ties keep the display order.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < n; ++i) {
    rank_out[i] = std::nan("");
    has_text[i] = 0;
    text_out[i].clear();
    if (!std::isnan(values[i])) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] > values[b]; });
  const double middle = (static_cast<double>(order.size()) + 1) / 2;
  for (std::size_t g = 0; g < order.size();) {
    std::size_t end = g + 1;
    while (end < order.size() && values[order[end]] == values[order[g]]) ++end;
    const double low = static_cast<double>(g + 1), high = static_cast<double>(end);
    // The group's rows in display order, for the modes and formats that number them.
    std::vector<std::size_t> rows(order.begin() + static_cast<std::ptrdiff_t>(g), order.begin() + static_cast<std::ptrdiff_t>(end));
    std::sort(rows.begin(), rows.end());
    for (std::size_t k = 0; k < rows.size(); ++k) {
      double r;
      switch (mode) {
        case 1: r = low; break;
        case 2: r = (low + high) / 2; break;
        case 3: r = high; break;
        case 4: r = low + static_cast<double>(k); break;
        default: r = high <= middle ? low : low >= middle ? high : (low + high) / 2; break;
      }
      const std::size_t i = rows[k];
      rank_out[i] = r;
      if (end - g > 1) {
        has_text[i] = 1;
        if (fmt == 1) {
          text_out[i] = number_text(low);
        } else if (fmt == 2) {
          text_out[i] = k == 0 ? number_text(low) : std::string();
        } else if (mode == 4) {
          has_text[i] = 0;
        } else {
          text_out[i] = number_text(low) + " - " + number_text(high);
        }
      }
    }
    g = end;
  }
}

}  // namespace assoc
