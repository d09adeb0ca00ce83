// A QVD file parsed as it arrives, by the same pieces as read_qvd (qvd_header, qvd_symbols,
// qvd_records). The header's layout is checked against the declared size before any part is
// read, and a part is read only once every byte it spans is in the buffer; when the bytes fed
// differ from the declared size, or anything fails, finish() runs read_qvd over what was fed,
// so the result or the error is always the one read_qvd gives.
#include "assoc/qvd_stream.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "assoc/big_blocks.hpp"
#include "assoc/error.hpp"
#include "assoc/qvd.hpp"
#include "assoc/thread_name.hpp"
#include "qvd_header.hpp"
#include "qvd_records.hpp"
#include "qvd_symbols.hpp"
#include "stream_file.hpp"

namespace assoc {
namespace {

// Records are decoded once this many bytes of whole rows have arrived (or all of them).
constexpr std::size_t kRecordBlockBytes = std::size_t{1} << 18;
// The parser is woken once this many bytes have arrived since it was last woken: a wake-up per
// chunk (a futex call and two context switches) cost more than the parsing it started.
constexpr std::size_t kWakeBytes = kRecordBlockBytes;

}  // namespace

struct QvdStream::State {
  std::vector<std::uint8_t, CallocAllocator<std::uint8_t>> buffer;  // the declared size
  std::vector<std::uint8_t> overflow;                               // bytes past it
  std::optional<detail::StreamFile> file;                           // writes `buffer` out
  CpuAccount cpu;

  std::mutex mutex;
  std::condition_variable more;
  std::size_t received = 0;  // bytes in `buffer`, published under `mutex`
  std::size_t woken_at = 0;  // `received` when feed() last woke the parser (feed's own)
  std::optional<std::string> table_name;  // the header's, once it is read; under `mutex`
  bool stopping = false, finished = false;
  std::atomic<bool> finishing{false};  // set by finish(), read by the parser between steps

  // The parsing thread's own state.
  std::thread parser;
  std::size_t scanned = 0;  // bytes searched for the header's NUL
  std::size_t body_start = 0;
  std::optional<detail::TableHeader> header;
  std::vector<SymbolTable> symbols;
  std::vector<std::vector<std::uint32_t>> merged;  // read_qvd_symbols' map of repeated values, per field
  std::vector<bool> symbols_read;
  std::optional<detail::QvdRecordReader> records;
  std::exception_ptr error;

  void parse_loop();
  // Parses what the first `present` bytes complete; `last`: they are all there will be.
  void advance(std::size_t present, bool last);
  void read_header(std::size_t header_size);
  void read_symbols(std::size_t present, bool last);
  void read_records(std::size_t present, bool last);
  bool complete() const;
};

QvdStream::QvdStream(std::size_t size, const std::string& file, bool sync) : s_(std::make_unique<State>()) {
  if (const std::uint64_t memory = total_memory(); memory > 0 && size > memory)
    throw Error("a QVD file of " + std::to_string(size) + " bytes is larger than this machine's memory");
  {
    big_blocks::Uncleared every_byte_is_fed_before_it_is_read;
    s_->buffer.resize(size);
  }
  if (!file.empty()) s_->file.emplace(file, s_->buffer.data(), size, sync);
  s_->parser = std::thread([state = s_.get()] { state->parse_loop(); });
  name_thread(s_->parser, "assoc-qvd-parse");
}

QvdStream::~QvdStream() {
  {
    std::lock_guard<std::mutex> lock(s_->mutex);
    s_->stopping = true;
    s_->finishing = true;  // the parser stops after the step it is on
  }
  s_->more.notify_all();
  if (s_->parser.joinable()) s_->parser.join();
}

void QvdStream::feed(const std::uint8_t* data, std::size_t n) {
  State& s = *s_;
  if (s.finished) throw Error("the QVD stream is finished");
  // Only this call writes the buffer, past `received`; the parser reads below it.
  const std::size_t at = s.received;
  const std::size_t fits = std::min(n, s.buffer.size() - at);
  if (fits > 0) std::memcpy(s.buffer.data() + at, data, fits);
  if (fits < n) s.overflow.insert(s.overflow.end(), data + fits, data + n);
  if (fits > 0) {
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.received = at + fits;
    }
    if (s.file) s.file->filled(s.received);
    if (s.received - s.woken_at >= kWakeBytes || s.received == s.buffer.size()) {
      s.woken_at = s.received;
      s.more.notify_one();
    }
  }
}

std::size_t QvdStream::received() const { return s_->received + s_->overflow.size(); }

std::optional<std::string> QvdStream::table_name() const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  return s_->table_name;
}

CpuAccount& QvdStream::cpu() { return s_->cpu; }

LoadedTable QvdStream::finish() {
  State& s = *s_;
  if (s.finished) throw Error("the QVD stream is finished");
  s.finished = true;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.finishing = true;
  }
  s.more.notify_all();
  // The writer writes the rest while the parsing ends.
  if (s.file) s.file->end(s.overflow.data(), s.overflow.size());
  s.parser.join();
  std::optional<LoadedTable> table;
  if (!s.error && s.overflow.empty() && s.received == s.buffer.size()) {
    try {
      CpuScope scope(&s.cpu);
      s.advance(s.received, true);
      if (!s.complete()) throw Error("the QVD stream is incomplete");  // read_qvd names why
      std::vector<PackedIndex> indexes = s.records->finish(&s.cpu);
      table = detail::loaded_qvd_table(std::move(*s.header), std::move(s.symbols), s.merged, std::move(indexes),
                                       &s.cpu);
    } catch (const Error&) {
      // read_qvd below names the problem as it would
    }
  }
  // The buffer is read by the writer until this returns.
  if (s.file) s.file->close();
  if (!table) {
    // The bytes fed, whole, as read_qvd sees them.
    if (!s.overflow.empty()) {
      s.buffer.insert(s.buffer.end(), s.overflow.begin(), s.overflow.end());
      s.received = s.buffer.size();
    }
    table = read_qvd(s.buffer.data(), s.received, &s.cpu);
  }
  s.buffer = {};
  s.overflow = {};
  return std::move(*table);
}

bool QvdStream::State::complete() const {
  return received == buffer.size() && header && records && records->decoded() == records->rows() &&
         std::all_of(symbols_read.begin(), symbols_read.end(), [](bool b) { return b; });
}

void QvdStream::State::parse_loop() {
  // Parsing while bytes arrive takes only CPU time the receiving leaves idle: one thread, at
  // the lowest priority. finish() does what is left with every thread.
  lower_thread_priority();
  SerialScope one_thread;
  std::size_t seen = 0;
  for (;;) {
    std::size_t present;
    {
      std::unique_lock<std::mutex> lock(mutex);
      more.wait(lock, [&] { return stopping || finishing || received != seen; });
      if (stopping || finishing) return;
      present = received;
    }
    seen = present;
    // Once a part fails, the rest is left to read_qvd in finish().
    if (!error) {
      try {
        CpuScope scope(&cpu);
        advance(present, false);
      } catch (...) {
        error = std::current_exception();
      }
    }
  }
}

void QvdStream::State::advance(std::size_t present, bool last) {
  if (!header) {
    if (present == scanned) return;
    const void* nul = std::memchr(buffer.data() + scanned, 0, present - scanned);
    scanned = present;
    if (!nul) return;
    read_header(static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - buffer.data()));
  }
  read_symbols(present, last);
  read_records(present, last);
}

void QvdStream::State::read_header(std::size_t header_size) {
  header = detail::parse_qvd_header(std::string_view(reinterpret_cast<const char*>(buffer.data()), header_size));
  body_start = header_size + 1;
  // Checked against the declared size: every part read below lies inside the buffer.
  detail::check_qvd_layout(*header, buffer.size() - body_start);
  symbols.resize(header->fields.size());
  merged.resize(header->fields.size());
  symbols_read.assign(header->fields.size(), false);
  records.emplace(*header, buffer.data() + body_start);
  std::lock_guard<std::mutex> lock(mutex);
  table_name = header->name;
}

void QvdStream::State::read_symbols(std::size_t present, bool last) {
  const std::vector<detail::FieldHeader>& fields = header->fields;
  std::vector<std::size_t> ready;
  for (std::size_t f = 0; f < fields.size(); ++f)
    if (!symbols_read[f] && body_start + fields[f].offset + fields[f].length <= present) ready.push_back(f);
  if (ready.empty()) return;
  std::stable_sort(ready.begin(), ready.end(),
                   [&](std::size_t a, std::size_t b) { return fields[a].length > fields[b].length; });
  const std::uint8_t* body = buffer.data() + body_start;
  if (!last) {
    // One field at a time, so that finish() waits for one field at most.
    for (std::size_t f : ready) {
      if (finishing.load(std::memory_order_relaxed)) return;
      symbols[f] = detail::read_qvd_symbols(fields[f], body, merged[f], &cpu);
      symbols_read[f] = true;
    }
    return;
  }
  parallel_for(
      ready.size(),
      [&](std::size_t task) {
        const std::size_t f = ready[task];
        symbols[f] = detail::read_qvd_symbols(fields[f], body, merged[f], &cpu);
      },
      &cpu);
  for (std::size_t f : ready) symbols_read[f] = true;
}

void QvdStream::State::read_records(std::size_t present, bool last) {
  const std::size_t rows = records->rows();
  if (records->decoded() == rows) return;
  const std::size_t records_start = body_start + static_cast<std::size_t>(header->offset);
  if (present < records_start) return;
  const auto record_bytes = static_cast<std::size_t>(header->record_bytes);
  const std::size_t arrived = std::min(rows, (present - records_start) / record_bytes);
  const std::size_t block_rows = std::max<std::size_t>(64, kRecordBlockBytes / record_bytes / 64 * 64);
  std::size_t end = rows;
  if (arrived < rows) {
    // Whole 64-row blocks whose loads stay within the rows that have arrived.
    const std::size_t margin = detail::QvdRecordReader::ready_margin();
    if (arrived < margin) return;
    end = (arrived - margin) / 64 * 64;
  }
  if (last) {
    records->decode(end, &cpu);
    return;
  }
  // A block at a time, so that finish() waits for one block at most.
  while (end >= records->decoded() + block_rows && !finishing.load(std::memory_order_relaxed))
    records->decode(records->decoded() + block_rows, &cpu);
}

}  // namespace assoc
