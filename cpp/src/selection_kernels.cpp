// The scan kernels of selections: block-wise over packed columns, in parallel ranges.
#include "selection_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <vector>

#include "assoc/thread_pool.hpp"
#include "row_compress.hpp"

namespace assoc::detail {
namespace {

constexpr std::size_t kBatch = 1024;  // rows decoded at a time (16 whole blocks)
// Blocks a scan of many rows per block looks ahead.
constexpr std::size_t kAhead = 32;
// Rows a scan of few rows per block keeps asked for ahead: their rows are far apart, each read
// misses the cache, and memory serves this many misses at once rather than one by one.
constexpr unsigned kRowsAhead = 24;
// A block with at most this many rows of a row set is matched row by row, not as a whole.
constexpr unsigned kFewRows = 8;
// A block with at most this many rows of a row set has their values read row by row; one
// with more is decoded whole, and its rows' values taken from that.
constexpr unsigned kFewRowsToRead = 12;
// A decoded block with more than this many rows of a row set has every row's value added
// (those of other rows add nothing); one with fewer has its rows' values packed first.
constexpr unsigned kManyRows = 40;

// Read-ahead for a scan of a column over the blocks [first, last) of a row set. When at least
// one block in 8 holds rows, every line of the blocks ahead is asked for: a stream, which
// memory serves far faster than the same lines missed one by one. When fewer do, the line of
// each row kRowsAhead rows ahead of the scan.
class ReadAhead {
 public:
  ReadAhead(const PackedIndex& index, const Bitset& rows, std::size_t first, std::size_t last)
      : data_(index.data()), block_bytes_(std::size_t{8} * index.bit_width()), width_(index.bit_width()),
        set_(rows), rows_(rows.words()), last_(last), next_(first) {
    stream_ = rows.words_in_use(first, last) * 8 >= last - first;
    if (next_ < last_) bits_ = rows_[next_];
  }
  // The first block from w that the scan must look at: w itself while every block is read
  // ahead, else the next that holds rows (`last` when none does).
  std::size_t from(std::size_t w) const { return stream_ ? w : set_.next_word(w, last_); }
  // Called at block w before its rows are read, at increasing blocks (not necessarily each).
  void at(std::size_t w) {
    if (stream_) {
      const std::size_t ahead = w + kAhead;
      if (ahead >= last_) return;
      const std::uint8_t* p = data_ + ahead * block_bytes_;
      for (std::size_t k = 0; k < block_bytes_; k += 64) __builtin_prefetch(p + k);
      return;
    }
    if (next_ < w) {  // the scan passed blocks it was not called at: ask on from here
      next_ = w;
      bits_ = rows_[w];
      asked_ = reached_;
    }
    const std::uint64_t here = rows_[w];
    if (here == 0) return;
    reached_ += popcount64(here);
    while (asked_ < reached_ + kRowsAhead) {
      while (bits_ == 0) {
        if ((next_ = set_.next_word(next_ + 1, last_)) >= last_) return;
        bits_ = rows_[next_];
      }
      const std::size_t row = next_ * 64 + static_cast<std::size_t>(std::countr_zero(bits_));
      bits_ &= bits_ - 1;
      __builtin_prefetch(data_ + row * width_ / 8);
      ++asked_;
    }
  }

 private:
  const std::uint8_t* data_;
  std::size_t block_bytes_;
  std::size_t width_;
  const Bitset& set_;
  const std::uint64_t* rows_;
  std::size_t last_;
  bool stream_ = false;
  std::size_t next_;        // the block of the next row to ask for
  std::uint64_t bits_ = 0;  // its rows not asked for yet
  std::size_t reached_ = 0, asked_ = 0;  // rows the scan reached, rows asked for
};

// A scan for a column's values stops once its tasks together have found every value the
// column can hold. Every kCheckBlocks blocks (64 rows each), or every kCheckBlocksPerWord
// blocks per word of its set when that is longer (a look then costs little beside the scan
// between two), and when it ends while others still scan or wait, a task adds its finds to the
// tasks' together and counts those, once it has found half the values itself. Between two
// such looks it asks every kFlagBlocks blocks whether another task saw them all.
constexpr std::size_t kCheckBlocks = 256;
constexpr std::size_t kCheckBlocksPerWord = 32;
// (The scan's read-ahead starts again after each.)
constexpr std::size_t kFlagBlocks = 2048;

// The values a scan's tasks found, together: a set each task adds its own finds to.
class Finds {
 public:
  explicit Finds(std::size_t words) : words_(words) {
    for (auto& w : words_) w.store(0, std::memory_order_relaxed);
  }
  // Adds `acc`'s bits (a symbol_set of `limit` symbols); whether the tasks together now hold
  // `target` values, NULL's bit aside.
  bool add(const Bitset& acc, std::uint32_t limit, std::size_t target) {
    const std::uint64_t* a = acc.words();
    std::size_t found = 0;
    for (std::size_t i = 0; i < words_.size(); ++i) {
      std::uint64_t w = words_[i].load(std::memory_order_acquire);
      if ((a[i] & ~w) != 0) w = words_[i].fetch_or(a[i], std::memory_order_acq_rel) | a[i];
      if (i == limit / 64) w &= ~(std::uint64_t{1} << (limit % 64));
      found += static_cast<std::size_t>(std::popcount(w));
    }
    return found >= target;
  }

 private:
  std::vector<std::atomic<std::uint64_t>> words_;
};

// When a scan of values may stop early: `target` values (those of the column, NULL aside)
// found by the tasks together (`finds`), which `found_all` tells every task; `unfinished`
// counts the tasks that have not ended.
struct EarlyExit {
  std::size_t target;
  std::atomic<bool>* found_all;
  Finds* finds;
  std::atomic<std::size_t>* unfinished;
  bool found() const { return found_all->load(std::memory_order_relaxed); }
  // Adds a task's finds (once they are half the values); whether the scan may stop (the other
  // tasks are told).
  bool reached(const Bitset& acc, std::uint32_t limit) const {
    if (found()) return true;
    if (2 * acc.count() < target || !finds->add(acc, limit, target)) return false;
    found_all->store(true, std::memory_order_relaxed);
    return true;
  }
};

// Adds the symbols on rows of blocks [first, last) (all rows when `rows` is null) to `acc`.
void collect_values(const PackedIndex& index, const Bitset* rows, std::size_t first, std::size_t last,
                    std::uint32_t limit, Bitset& acc) {
  const std::size_t n = index.size();
  std::uint64_t* a = acc.words();
  std::uint32_t buf[kBatch];
  if (rows == nullptr) {
    const std::size_t end = std::min(n, last * 64);
    for (std::size_t r = first * 64; r < end; r += kBatch) {
      const std::size_t k = std::min(kBatch, end - r);
      index.decode(r, k, buf);
      for (std::size_t j = 0; j < k; ++j) {
        const std::uint32_t x = std::min(buf[j], limit);
        a[x >> 6] |= std::uint64_t{1} << (x & 63);
      }
    }
    return;
  }
  const std::uint64_t* m = rows->words();
  ReadAhead read_ahead(index, *rows, first, last);
  for (std::size_t w = read_ahead.from(first); w < last; w = read_ahead.from(w + 1)) {
    read_ahead.at(w);
    std::uint64_t bits = m[w];
    if (bits == 0) continue;
    // Few rows in a block: read them one by one; many: decode the block.
    if (popcount64(bits) <= kFewRowsToRead) {
      for (; bits != 0; bits &= bits - 1) {
        const std::uint32_t x = std::min(index.get(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))), limit);
        a[x >> 6] |= std::uint64_t{1} << (x & 63);
      }
    } else {
      // A run of such blocks (up to a batch) decoded in one call, each then read from it.
      std::size_t e = w + 1;
      while (e < last && e - w < kBatch / 64 && popcount64(m[e]) > kFewRowsToRead) read_ahead.at(e++);
      const std::size_t rows_decoded = std::min(n, e * 64) - w * 64;
      index.decode(w * 64, rows_decoded, buf);
      for (std::size_t at = w; at < e; ++at) {
        std::uint32_t* codes = buf + (at - w) * 64;
        const std::size_t k = std::min<std::size_t>(64, rows_decoded - (at - w) * 64);
        std::uint64_t these = m[at];
        if (k < 64) these &= (std::uint64_t{1} << k) - 1;  // the last block: rows of the column only
        if (popcount64(these) > kManyRows) {  // most rows: every one, a row of the set or not
          for (std::size_t j = 0; j < k; ++j) {
            const std::uint32_t x = std::min(codes[j], limit);
            a[x >> 6] |= ((these >> j) & 1U) << (x & 63);
          }
          continue;
        }
        const std::uint64_t block[1] = {these};  // (these itself stays in a register)
        const std::size_t kept = compress_rows(block, k, codes, codes);  // the block's rows of the set only
        for (std::size_t i = 0; i < kept; ++i) {
          const std::uint32_t x = std::min(codes[i], limit);
          a[x >> 6] |= std::uint64_t{1} << (x & 63);
        }
      }
      w = e - 1;  // the loop goes on from e
    }
  }
}

// collect_values in steps, stopping between two once `exit` says the tasks together found
// every value (then the union of their sets holds them all).
void collect_values_until(const PackedIndex& index, const Bitset* rows, std::size_t first, std::size_t last,
                          std::uint32_t limit, Bitset& acc, const EarlyExit& exit) {
  const std::size_t look = std::max(kCheckBlocks, kCheckBlocksPerWord * acc.word_count());
  const std::size_t step = std::min(look, kFlagBlocks);
  std::size_t next_look = first + look;
  for (std::size_t from = first; from < last; from += step) {
    if (exit.found()) break;
    if (from >= next_look) {
      if (exit.reached(acc, limit)) break;
      next_look = from + look;
    }
    collect_values(index, rows, from, std::min(last, from + step), limit, acc);
  }
  // The tasks still scanning, or yet to begin, may be spared the rest.
  if (exit.unfinished->fetch_sub(1, std::memory_order_acq_rel) > 1) exit.reached(acc, limit);
}

}  // namespace

// Rows of a column (within `within` when given) whose symbol is in `set`. Membership is looked
// up per stored code in a byte per code while the column is narrow enough for that table to
// stay in cache, in the bitset otherwise. Within a row set, blocks without its rows are
// skipped and blocks with few of them are read row by row.
Bitset match_rows(const PackedIndex& index, const Bitset& set, const Bitset* within) {
  const std::size_t n = index.size();
  Bitset out(n);
  const auto limit = static_cast<std::uint32_t>(set.size() - 1);
  const std::uint32_t bias = index.has_null() ? 1U : 0U;
  std::vector<std::uint8_t> codes;
  if (index.bit_width() <= PackedIndex::kMaxCodeSetWidth) codes = index.code_set(set.words(), limit);
  auto member = [&](std::size_t r) {
    return codes.empty() ? set.test(std::min(index.get(r), limit)) : codes[index.get(r) + bias] != 0;
  };
  auto match_blocks = [&](std::size_t first, std::size_t count, std::uint64_t* o) {
    if (codes.empty()) {
      index.match_blocks(first, count, set.words(), limit, o);
    } else {
      index.match_codes(first, count, codes.data(), o);
    }
  };
  std::uint64_t* o = out.words();
  const std::size_t whole = n / 64;
  parallel_ranges(
      whole, 16,
      [&](std::size_t begin, std::size_t end) {
        if (within == nullptr) {
          match_blocks(begin, end - begin, o + begin);
          return;
        }
        const std::uint64_t* m = within->words();
        ReadAhead read_ahead(index, *within, begin, end);
        // (o's words of the blocks skipped stay zero.)
        for (std::size_t w = read_ahead.from(begin); w < end; w = read_ahead.from(w)) {
          read_ahead.at(w);
          const std::uint64_t bits = m[w];
          if (bits == 0) {
            ++w;
          } else if (popcount64(bits) <= kFewRows) {
            std::uint64_t hit = 0;
            for (std::uint64_t b = bits; b != 0; b &= b - 1) {
              const auto j = static_cast<unsigned>(std::countr_zero(b));
              hit |= std::uint64_t{member(w * 64 + j)} << j;
            }
            o[w++] = hit;
          } else {
            // A run of blocks with many rows each: matched whole, then kept within.
            std::size_t e = w + 1;
            while (e < end && popcount64(m[e]) > kFewRows) ++e;
            match_blocks(w, e - w, o + w);
            for (; w < e; ++w) o[w] &= m[w];
          }
        }
      },
      nullptr, std::size_t{1} << 10);
  // The last, partial block.
  for (std::size_t r = whole * 64; r < n; ++r)
    if ((within == nullptr || within->test(r)) && member(r)) o[r / 64] |= std::uint64_t{1} << (r % 64);
  out.summarize();
  return out;
}

// Symbols that occur on `rows` (null: every row) of a column.
Bitset values_on_rows(const PackedIndex& index, const Bitset* rows, std::uint32_t n_symbols, std::size_t held) {
  Bitset out = symbol_set(n_symbols);
  const std::size_t blocks = (index.size() + 63) / 64;
  // Each task gathers into a bitset of its own, at least 256 blocks (16K rows) per task.
  const std::size_t tasks = std::max<std::size_t>(1, std::min<std::size_t>(threads() * 2, blocks / 256));
  std::vector<Bitset> partial(tasks - 1);
  // Once the tasks together have found every value the column holds, the scan ends: worth
  // looking for while there are many rows for each such value (few distinct values:
  // dimensions, flags, years; or a large share of the rows of a wider field).
  std::atomic<bool> found_all{false};
  std::atomic<std::size_t> unfinished{tasks};
  Finds finds(out.word_count());
  const EarlyExit exit{std::min<std::size_t>(held, n_symbols), &found_all, &finds, &unfinished};
  const bool may_exit = held > 0 && held * 16 <= index.size();
  parallel_for(tasks, [&](std::size_t t) {
    Bitset* acc = &out;
    if (t > 0) {
      partial[t - 1] = symbol_set(n_symbols);
      acc = &partial[t - 1];
    }
    const std::size_t first = blocks * t / tasks, last = blocks * (t + 1) / tasks;
    if (may_exit) {
      collect_values_until(index, rows, first, last, n_symbols, *acc, exit);
    } else {
      collect_values(index, rows, first, last, n_symbols, *acc);
    }
  });
  // Every task's finds: those that stopped part way hold some of the values, the others the rest.
  for (const auto& p : partial) out.or_with(p);
  out.reset(n_symbols);
  return out;
}

}  // namespace assoc::detail
