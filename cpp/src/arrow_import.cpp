// Tables from the Arrow C stream interface: each top-level field becomes a column whose
// symbols are interned as other loaders do, and whose rows are packed once all batches are read.
// The producer is not trusted: every length, offset, buffer count and index is checked before
// use. (Buffer sizes are not part of the C interface, except the sizes of a view array's data
// buffers, which are checked too; the bytes behind a checked offset are the producer's promise.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <limits>
#include <string>
#include <string_view>

#include "assoc/arrow_c.hpp"
#include "assoc/error.hpp"
#include "assoc/number_text.hpp"
#include "assoc/utf8.hpp"

namespace assoc {

namespace {

// Qlik's day number of 1970-01-01 (days since 1899-12-30).
constexpr double kUnixEpochDay = 25569.0;
// Rows and offsets beyond this are refused before any arithmetic on them.
constexpr std::int64_t kMaxLength = std::int64_t{1} << 48;

enum class Kind : std::uint8_t {
  kNull,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kFloat32,
  kFloat64,
  kBool,
  kDecimal128,
  kUtf8,
  kLargeUtf8,
  kUtf8View,
  kDate32,
  kDate64,
  kTimestamp,
};

struct ValueType {
  Kind kind = Kind::kNull;
  int scale = 0;              // decimal128
  double units_per_day = 1;   // timestamps
};

std::string type_name(const char* format) {
  const std::string f = format;
  static const std::pair<const char*, const char*> kNames[] = {
      {"e", "float16"},          {"z", "binary"},          {"Z", "large_binary"}, {"vz", "binary_view"},
      {"+l", "list"},            {"+L", "large_list"},     {"+s", "struct"},      {"+m", "map"},
      {"+vl", "list_view"},      {"+r", "run_end_encoded"}, {"tts", "time32[s]"},  {"ttm", "time32[ms]"},
      {"ttu", "time64[us]"},     {"ttn", "time64[ns]"},    {"tDs", "duration[s]"}, {"tDm", "duration[ms]"},
      {"tDu", "duration[us]"},   {"tDn", "duration[ns]"},  {"tiM", "interval[months]"},
      {"tiD", "interval[days]"}, {"tin", "interval[month_day_nano]"}};
  for (const auto& [fmt, name] : kNames)
    if (f == fmt) return name;
  if (f.rfind("w:", 0) == 0) return "fixed_size_binary";
  if (f.rfind("+w:", 0) == 0) return "fixed_size_list";
  if (f.rfind("+u", 0) == 0) return "union";
  if (f.rfind("d:", 0) == 0) return "decimal (" + f + ")";
  return "'" + f + "'";
}

// The value type of a format string, or false when the engine does not read it.
bool parse_value_type(const char* format, ValueType& out) {
  const std::string_view f(format);
  static const std::pair<std::string_view, Kind> kPlain[] = {
      {"n", Kind::kNull},     {"c", Kind::kInt8},     {"C", Kind::kUInt8},    {"s", Kind::kInt16},
      {"S", Kind::kUInt16},   {"i", Kind::kInt32},    {"I", Kind::kUInt32},   {"l", Kind::kInt64},
      {"L", Kind::kUInt64},   {"f", Kind::kFloat32},  {"g", Kind::kFloat64},  {"b", Kind::kBool},
      {"u", Kind::kUtf8},     {"U", Kind::kLargeUtf8}, {"vu", Kind::kUtf8View}, {"tdD", Kind::kDate32},
      {"tdm", Kind::kDate64}};
  for (const auto& [fmt, kind] : kPlain) {
    if (f == fmt) {
      out.kind = kind;
      return true;
    }
  }
  if (f.size() >= 4 && f.substr(0, 2) == "ts" && f[3] == ':') {
    switch (f[2]) {
      case 's': out.units_per_day = 86400.0; break;
      case 'm': out.units_per_day = 86400e3; break;
      case 'u': out.units_per_day = 86400e6; break;
      case 'n': out.units_per_day = 86400e9; break;
      default: return false;
    }
    out.kind = Kind::kTimestamp;
    return true;
  }
  if (f.substr(0, 2) == "d:") {
    // d:precision,scale[,bitwidth]; only 128-bit decimals.
    const std::string rest(f.substr(2));
    int precision = 0, scale = 0, bits = 128, used = 0;
    const int n = std::sscanf(rest.c_str(), "%d,%d%n", &precision, &scale, &used);
    if (n != 2) return false;
    if (static_cast<std::size_t>(used) != rest.size()) {
      int more = 0;
      if (std::sscanf(rest.c_str() + used, ",%d%n", &bits, &more) != 1 ||
          static_cast<std::size_t>(used + more) != rest.size())
        return false;
    }
    if (bits != 128 || precision < 1 || precision > 38 || scale < -300 || scale > 300) return false;
    out.kind = Kind::kDecimal128;
    out.scale = scale;
    return true;
  }
  return false;
}

bool is_index_kind(Kind k) {
  return k == Kind::kInt8 || k == Kind::kUInt8 || k == Kind::kInt16 || k == Kind::kUInt16 || k == Kind::kInt32 ||
         k == Kind::kUInt32 || k == Kind::kInt64 || k == Kind::kUInt64;
}

// Whether a value type reads as numbers alone (no texts).
bool is_number_kind(Kind k) {
  return is_index_kind(k) || k == Kind::kFloat32 || k == Kind::kFloat64 || k == Kind::kBool ||
         k == Kind::kDecimal128 || k == Kind::kDate32 || k == Kind::kDate64 || k == Kind::kTimestamp;
}

// How one column reads: its values' type, and its dictionary's when it is dictionary-encoded.
struct ColumnType {
  std::string name;
  ValueType values;  // the index type for a dictionary column
  bool dictionary = false;
  ValueType dict_values;
};

// The lengths, offset and buffers of an array, checked against what its type needs.
void check_array(const ArrowArray* a, const ValueType& t, const std::string& where) {
  if (a == nullptr || a->release == nullptr) throw Error(where + ": missing or released array");
  if (a->length < 0 || a->offset < 0 || a->length > kMaxLength || a->offset > kMaxLength)
    throw Error(where + ": array length " + std::to_string(a->length) + " or offset " + std::to_string(a->offset) +
                " out of range");
  if (a->null_count < -1 || a->null_count > a->length)
    throw Error(where + ": null count " + std::to_string(a->null_count) + " for " + std::to_string(a->length) +
                " values");
  std::int64_t need = 2;
  if (t.kind == Kind::kNull) need = 0;
  if (t.kind == Kind::kUtf8 || t.kind == Kind::kLargeUtf8) need = 3;
  if (t.kind == Kind::kUtf8View) {
    // validity, views, the variadic data buffers, then their sizes
    if (a->n_buffers < 3) throw Error(where + ": a string view array needs at least 3 buffers");
  } else if (a->n_buffers != need) {
    throw Error(where + ": " + std::to_string(a->n_buffers) + " buffers where the type has " + std::to_string(need));
  }
  if (a->n_buffers > (std::int64_t{1} << 20)) throw Error(where + ": too many buffers");
  if (a->n_buffers > 0 && a->buffers == nullptr) throw Error(where + ": no buffer pointers");
  if (t.kind == Kind::kNull) return;
  if (a->null_count != 0 && a->null_count != -1 && a->buffers[0] == nullptr && a->length > 0)
    throw Error(where + ": null values without a validity bitmap");
  if (a->length > 0) {
    for (std::int64_t b = 1; b < std::min<std::int64_t>(a->n_buffers, t.kind == Kind::kUtf8View ? 2 : need); ++b)
      if (a->buffers[b] == nullptr) throw Error(where + ": buffer " + std::to_string(b) + " is missing");
  }
}

inline bool bit(const void* bits, std::int64_t i) {
  return (static_cast<const std::uint8_t*>(bits)[i >> 3] >> (i & 7)) & 1U;
}

// Calls f(i, value) for each row i of [0, n) of array `a` starting at its row `first`, with
// value null for NULL. `outer` (may be null) is the validity bitmap of the enclosing struct
// array, at bit `outer_first` for row 0.
template <typename F>
void for_each_value(const ArrowArray& a, const ValueType& t, std::int64_t first, std::int64_t n, const void* outer,
                    std::int64_t outer_first, const std::string& where, F&& f) {
  const std::int64_t base = a.offset + first;
  const void* validity = (t.kind == Kind::kNull || a.null_count == 0) ? nullptr : a.buffers[0];
  auto valid = [&](std::int64_t i) {
    if (outer != nullptr && !bit(outer, outer_first + i)) return false;
    return validity == nullptr || bit(validity, base + i);
  };
  auto numbers = [&](auto tag, auto convert) {
    using T = decltype(tag);
    const T* data = static_cast<const T*>(a.buffers[1]);
    for (std::int64_t i = 0; i < n; ++i) {
      if (!valid(i)) {
        f(i, nullptr);
        continue;
      }
      T v;
      std::memcpy(&v, data + base + i, sizeof v);
      const DualView d = DualView::of_number(convert(v));
      f(i, &d);
    }
  };
  auto plain = [](auto v) { return static_cast<double>(v); };
  switch (t.kind) {
    case Kind::kNull:
      for (std::int64_t i = 0; i < n; ++i) f(i, nullptr);
      return;
    case Kind::kInt8: return numbers(std::int8_t{}, plain);
    case Kind::kUInt8: return numbers(std::uint8_t{}, plain);
    case Kind::kInt16: return numbers(std::int16_t{}, plain);
    case Kind::kUInt16: return numbers(std::uint16_t{}, plain);
    case Kind::kInt32: return numbers(std::int32_t{}, plain);
    case Kind::kUInt32: return numbers(std::uint32_t{}, plain);
    case Kind::kInt64: return numbers(std::int64_t{}, plain);
    case Kind::kUInt64: return numbers(std::uint64_t{}, plain);
    case Kind::kFloat32: return numbers(float{}, plain);
    case Kind::kFloat64: return numbers(double{}, plain);
    case Kind::kDate32: return numbers(std::int32_t{}, [](std::int32_t v) { return v + kUnixEpochDay; });
    case Kind::kDate64:
      return numbers(std::int64_t{}, [](std::int64_t v) { return static_cast<double>(v) / 86400e3 + kUnixEpochDay; });
    case Kind::kTimestamp: {
      const double per_day = t.units_per_day;
      return numbers(std::int64_t{}, [per_day](std::int64_t v) {
        // Whole days and the rest apart, so that the day number keeps the time's precision.
        const auto units = static_cast<std::int64_t>(per_day);
        std::int64_t days = v / units, rest = v % units;
        if (rest < 0) {
          rest += units;
          days -= 1;
        }
        return static_cast<double>(days) + kUnixEpochDay + static_cast<double>(rest) / per_day;
      });
    }
    case Kind::kBool: {
      const void* data = a.buffers[1];
      for (std::int64_t i = 0; i < n; ++i) {
        if (!valid(i)) {
          f(i, nullptr);
          continue;
        }
        const DualView d = DualView::of_number(bit(data, base + i) ? 1.0 : 0.0);
        f(i, &d);
      }
      return;
    }
    case Kind::kDecimal128: {
      __extension__ typedef __int128 Int128;
      const auto* data = static_cast<const std::uint8_t*>(a.buffers[1]);
      const int scale = t.scale;
      const double power = scale >= 0 && scale <= 22 ? kPow10[scale] : std::pow(10.0, std::abs(scale));
      for (std::int64_t i = 0; i < n; ++i) {
        if (!valid(i)) {
          f(i, nullptr);
          continue;
        }
        Int128 v;
        std::memcpy(&v, data + (base + i) * 16, sizeof v);
        const double x = static_cast<double>(v);
        const DualView d = DualView::of_number(scale >= 0 ? x / power : x * power);
        f(i, &d);
      }
      return;
    }
    case Kind::kUtf8:
    case Kind::kLargeUtf8: {
      const bool large = t.kind == Kind::kLargeUtf8;
      const auto* chars = static_cast<const char*>(a.buffers[2]);
      auto offset_at = [&](std::int64_t i) -> std::int64_t {
        if (large) {
          std::int64_t o;
          std::memcpy(&o, static_cast<const std::int64_t*>(a.buffers[1]) + i, sizeof o);
          return o;
        }
        std::int32_t o;
        std::memcpy(&o, static_cast<const std::int32_t*>(a.buffers[1]) + i, sizeof o);
        return o;
      };
      if (n == 0) return;
      std::int64_t start = offset_at(base);
      if (start < 0) throw Error(where + ": negative string offset " + std::to_string(start));
      if (chars == nullptr) throw Error(where + ": the string data buffer is missing");
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t end = offset_at(base + i + 1);
        if (end < start || end - start > kMaxLength)
          throw Error(where + ": string offsets decrease or jump at row " + std::to_string(first + i) + " (" +
                      std::to_string(start) + " to " + std::to_string(end) + ")");
        if (!valid(i)) {
          f(i, nullptr);
        } else {
          const DualView d = DualView::of_text(
              std::string_view(chars + start, static_cast<std::size_t>(end - start)));
          f(i, &d);
        }
        start = end;
      }
      return;
    }
    case Kind::kUtf8View: {
      const std::int64_t n_data = a.n_buffers - 3;
      const auto* sizes = static_cast<const std::int64_t*>(a.buffers[a.n_buffers - 1]);
      if (n_data > 0 && sizes == nullptr) throw Error(where + ": the view buffer sizes are missing");
      const auto* views = static_cast<const std::uint8_t*>(a.buffers[1]);
      for (std::int64_t i = 0; i < n; ++i) {
        if (!valid(i)) {
          f(i, nullptr);
          continue;
        }
        const std::uint8_t* view = views + (base + i) * 16;
        std::int32_t len;
        std::memcpy(&len, view, 4);
        if (len < 0) throw Error(where + ": negative string length at row " + std::to_string(first + i));
        std::string_view text;
        if (len <= 12) {
          text = std::string_view(reinterpret_cast<const char*>(view + 4), static_cast<std::size_t>(len));
        } else {
          std::int32_t buffer, offset;
          std::memcpy(&buffer, view + 8, 4);
          std::memcpy(&offset, view + 12, 4);
          std::int64_t size = 0;
          if (buffer >= 0 && buffer < n_data) std::memcpy(&size, sizes + buffer, sizeof size);
          if (buffer < 0 || buffer >= n_data || offset < 0 || offset > size || len > size - offset ||
              a.buffers[2 + buffer] == nullptr)
            throw Error(where + ": string view at row " + std::to_string(first + i) +
                        " points outside its data buffers");
          text = std::string_view(static_cast<const char*>(a.buffers[2 + buffer]) + offset,
                                  static_cast<std::size_t>(len));
        }
        const DualView d = DualView::of_text(text);
        f(i, &d);
      }
      return;
    }
  }
}

// Reads an index of a dictionary array (of an integer kind) as int64.
std::int64_t index_at(const ArrowArray& a, Kind k, std::int64_t i) {
  auto read = [&](auto tag) -> std::int64_t {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, static_cast<const T*>(a.buffers[1]) + i, sizeof v);
    if constexpr (std::is_same_v<T, std::uint64_t>) {
      return v > static_cast<std::uint64_t>(kMaxLength) ? -1 : static_cast<std::int64_t>(v);
    } else {
      return static_cast<std::int64_t>(v);
    }
  };
  switch (k) {
    case Kind::kInt8: return read(std::int8_t{});
    case Kind::kUInt8: return read(std::uint8_t{});
    case Kind::kInt16: return read(std::int16_t{});
    case Kind::kUInt16: return read(std::uint16_t{});
    case Kind::kInt32: return read(std::int32_t{});
    case Kind::kUInt32: return read(std::uint32_t{});
    case Kind::kInt64: return read(std::int64_t{});
    default: return read(std::uint64_t{});
  }
}

// One column being read: its symbols so far and each row's symbol.
class ColumnReader {
 public:
  ColumnReader(const ColumnType& type, std::size_t rows) : type_(type), where_("column '" + type.name + "'") {
    rows_.resize(rows);
  }

  // Reads rows [first, first+n) of child array `a` to table rows from `at`.
  void read(const ArrowArray& a, std::int64_t first, std::int64_t n, const void* outer, std::int64_t outer_first,
            std::size_t at) {
    check_array(&a, type_.values, where_);
    if (first + n > a.length)
      throw Error(where_ + ": an array of " + std::to_string(a.length) + " values in a batch of " +
                  std::to_string(first + n) + " rows");
    if (type_.dictionary) {
      read_dictionary(a, first, n, outer, outer_first, at);
      return;
    }
    std::uint32_t* rows = rows_.data() + at;
    if (is_number_kind(type_.values.kind)) {  // the numbers first, then interned at once
      numbers_.resize(static_cast<std::size_t>(n));
      double* numbers = numbers_.data();
      for_each_value(a, type_.values, first, n, outer, outer_first, where_, [&](std::int64_t i, const DualView* v) {
        numbers[i] = v == nullptr ? std::nan("") : v->number;
        if (std::isinf(numbers[i])) refuse_infinite(first + i);
      });
      symbols_.intern_numbers(numbers, static_cast<std::size_t>(n), rows);
      return;
    }
    for_each_value(a, type_.values, first, n, outer, outer_first, where_, [&](std::int64_t i, const DualView* v) {
      rows[i] = v == nullptr ? kNull : intern(*v, first + i);
    });
  }

  LoadedColumn finish(CpuAccount* cpu) {
    LoadedColumn c;
    c.name = type_.name;
    c.symbols = symbols_.finish();
    c.index = PackedIndex::pack(rows_.data(), rows_.size(), c.symbols.size(), cpu);
    std::vector<std::uint32_t>().swap(rows_);
    return c;
  }

 private:
  std::uint32_t intern(const DualView& v, std::int64_t row) {
    if (v.has_text) {
      const std::uint32_t before = symbols_.size();
      const std::uint32_t s = symbols_.intern(v);
      if (s == before && !valid_utf8(reinterpret_cast<const unsigned char*>(v.text.data()), v.text.size()))
        throw Error(where_ + ": the text at row " + std::to_string(row) + " is not UTF-8");
      return s;
    }
    if (std::isnan(v.number)) return kNull;
    if (std::isinf(v.number)) refuse_infinite(row);
    return symbols_.intern(v);
  }

  [[noreturn]] void refuse_infinite(std::int64_t row) const {
    throw Error(where_ + ": infinite numbers are not values (row " + std::to_string(row) + ")");
  }

  void read_dictionary(const ArrowArray& a, std::int64_t first, std::int64_t n, const void* outer,
                       std::int64_t outer_first, std::size_t at) {
    const ArrowArray* dict = a.dictionary;
    check_array(dict, type_.dict_values, where_ + "'s dictionary");
    const std::int64_t size = dict->length;
    const std::int64_t base = a.offset + first;
    const void* validity = a.null_count == 0 ? nullptr : a.buffers[0];
    std::uint32_t* rows = rows_.data() + at;
    // Indexes first: each checked, NULL rows marked; the dictionary values rows use, marked.
    constexpr std::uint32_t kUnused = 0xFFFFFFFEU;
    std::vector<std::uint32_t> remap(static_cast<std::size_t>(size), kUnused);
    for (std::int64_t i = 0; i < n; ++i) {
      if ((outer != nullptr && !bit(outer, outer_first + i)) || (validity != nullptr && !bit(validity, base + i))) {
        rows[i] = kNull;
        continue;
      }
      const std::int64_t k = index_at(a, type_.values.kind, base + i);
      if (k < 0 || k >= size)
        throw Error(where_ + ": dictionary index " + std::to_string(k) + " at row " + std::to_string(first + i) +
                    " outside a dictionary of " + std::to_string(size));
      rows[i] = static_cast<std::uint32_t>(k);
      remap[static_cast<std::size_t>(k)] = 0;
    }
    // The dictionary's values become symbols, in dictionary order, those rows use only.
    for_each_value(*dict, type_.dict_values, 0, size, nullptr, 0, where_ + "'s dictionary",
                   [&](std::int64_t k, const DualView* v) {
                     auto& r = remap[static_cast<std::size_t>(k)];
                     if (r == kUnused) return;
                     r = v == nullptr ? kNull : intern(*v, k);
                   });
    for (std::int64_t i = 0; i < n; ++i)
      if (rows[i] != kNull) rows[i] = remap[rows[i]];
  }

  const ColumnType& type_;
  std::string where_;
  SymbolTableBuilder symbols_;
  std::vector<std::uint32_t> rows_;
  std::vector<double> numbers_;  // a batch's numbers, NaN for NULL
};

}  // namespace

ArrowBatches::ArrowBatches() { std::memset(&schema_, 0, sizeof schema_); }

ArrowBatches::~ArrowBatches() {
  for (auto& b : batches_)
    if (b.release != nullptr) b.release(&b);
  if (schema_.release != nullptr) schema_.release(&schema_);
}

void ArrowBatches::read(ArrowArrayStream* stream) {
  if (stream == nullptr || stream->release == nullptr) throw Error("the Arrow stream is released already");
  struct Releaser {
    ArrowArrayStream* s;
    ~Releaser() {
      if (s->release != nullptr) s->release(s);
    }
  } releaser{stream};
  auto failed = [&](int rc, const char* what) {
    const char* message = stream->get_last_error != nullptr ? stream->get_last_error(stream) : nullptr;
    throw Error(std::string("the Arrow stream failed ") + what + " (error " + std::to_string(rc) +
                (message != nullptr ? std::string("): ") + message : std::string(")")));
  };
  if (stream->get_schema == nullptr || stream->get_next == nullptr) throw Error("the Arrow stream has no callbacks");
  if (const int rc = stream->get_schema(stream, &schema_); rc != 0) failed(rc, "to give its schema");
  if (schema_.release == nullptr) throw Error("the Arrow stream gave a released schema");
  for (;;) {
    ArrowArray batch;
    std::memset(&batch, 0, sizeof batch);
    if (const int rc = stream->get_next(stream, &batch); rc != 0) failed(rc, "to give a batch");
    if (batch.release == nullptr) break;
    batches_.push_back(batch);
  }
}

ArrowImport import_arrow(const ArrowBatches& batches, const std::string& name, CpuAccount* cpu) {
  const ArrowSchema& schema = batches.schema();
  if (schema.format == nullptr || std::string_view(schema.format) != "+s")
    throw Error("an Arrow table must be a stream of record batches (a struct), not type " +
                type_name(schema.format == nullptr ? "?" : schema.format));
  if (schema.n_children < 0 || schema.n_children > 100000 || (schema.n_children > 0 && schema.children == nullptr))
    throw Error("the Arrow schema's field count is out of range");
  const auto n_columns = static_cast<std::size_t>(schema.n_children);
  std::vector<ColumnType> types(n_columns);
  ArrowImport out;
  out.temporal.assign(n_columns, ArrowTemporal::kNone);
  for (std::size_t c = 0; c < n_columns; ++c) {
    const ArrowSchema* s = schema.children[c];
    if (s == nullptr || s->format == nullptr) throw Error("the Arrow schema's field " + std::to_string(c) + " is missing");
    ColumnType& t = types[c];
    t.name = s->name != nullptr ? s->name : "";
    if (t.name.empty()) throw Error("the Arrow schema's field " + std::to_string(c) + " has no name");
    const std::string where = "column '" + t.name + "'";
    if (!parse_value_type(s->format, t.values))
      throw Error(where + ": the Arrow type " + type_name(s->format) + " is not supported");
    if (s->dictionary != nullptr) {
      if (!is_index_kind(t.values.kind))
        throw Error(where + ": a dictionary index of type " + type_name(s->format) + " is not supported");
      if (s->dictionary->format == nullptr || s->dictionary->dictionary != nullptr ||
          !parse_value_type(s->dictionary->format, t.dict_values))
        throw Error(where + ": a dictionary of Arrow type " +
                    type_name(s->dictionary->format == nullptr ? "?" : s->dictionary->format) + " is not supported");
      t.dictionary = true;
    }
    const Kind k = t.dictionary ? t.dict_values.kind : t.values.kind;
    if (k == Kind::kDate32 || k == Kind::kDate64) out.temporal[c] = ArrowTemporal::kDate;
    if (k == Kind::kTimestamp) out.temporal[c] = ArrowTemporal::kTimestamp;
  }

  // Batches: their shape checked, their rows counted.
  std::size_t rows = 0;
  std::vector<std::size_t> starts;
  for (const ArrowArray& b : batches.batches()) {
    if (b.length < 0 || b.offset < 0 || b.length > kMaxLength || b.offset > kMaxLength || b.n_buffers != 1 ||
        b.buffers == nullptr || b.n_children != schema.n_children || (b.n_children > 0 && b.children == nullptr))
      throw Error("an Arrow batch does not match its schema (" + std::to_string(b.n_children) + " of " +
                  std::to_string(n_columns) + " columns, " + std::to_string(b.n_buffers) + " buffers)");
    starts.push_back(rows);
    rows += static_cast<std::size_t>(b.length);
    if (rows >= 0xFFFFFFFFULL) throw Error("an Arrow table of more than 4294967294 rows");
  }

  std::vector<LoadedColumn> columns(n_columns);
  parallel_for(
      n_columns,
      [&](std::size_t c) {
        ColumnReader reader(types[c], rows);
        for (std::size_t k = 0; k < batches.batches().size(); ++k) {
          const ArrowArray& b = batches.batches()[k];
          const void* outer = b.null_count != 0 ? b.buffers[0] : nullptr;
          const ArrowArray* child = b.children[c];
          if (child == nullptr) throw Error("column '" + types[c].name + "': a batch lacks its array");
          reader.read(*child, b.offset, b.length, outer, b.offset, starts[k]);
        }
        columns[c] = reader.finish(cpu);
      },
      cpu);
  out.table.name = name;
  out.table.rows = rows;
  out.table.columns = std::move(columns);
  return out;
}

}  // namespace assoc
