#pragma once
// A QVD file read while its bytes arrive (an upload): each part is parsed as soon as it is
// complete, so little is left to do once the last byte is in.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "assoc/data_model.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {

class QvdStream {
 public:
  // A stream of a file declared to be `size` bytes long, held in one buffer of that size (a size
  // beyond the machine's memory throws Error). A thread of its own parses what has arrived: the
  // header once its NUL is in, each field's symbols once their section is complete, the records
  // in blocks of whole rows. It runs alone and at the lowest priority, on CPU time the receiving
  // leaves idle (with the pool's threads it slowed a 2-core machine's receiving by more than it
  // saved); finish() parses what is left on the whole thread pool.
  //
  // With a `file` path, the bytes are also written to that new file (see StreamFile: a thread
  // of its own writes them as they come, never making feed() wait for the disk), complete
  // when finish() returns, and with `sync` on disk too (flushed while the parsing ends); its
  // errors, and a full disk at the start, are FileError.
  explicit QvdStream(std::size_t size, const std::string& file = {}, bool sync = false);
  ~QvdStream();  // stops the parsing (waiting for the block it is on)
  QvdStream(const QvdStream&) = delete;
  QvdStream& operator=(const QvdStream&) = delete;

  // Appends bytes (copied; never blocks on parsing). Bytes past the declared size are kept too.
  void feed(const std::uint8_t* data, std::size_t n);
  // Waits for the parsing (and the file) and returns what read_qvd returns for every byte fed:
  // the same table, or the same Error. Once only; the buffer is freed.
  LoadedTable finish();
  // Bytes fed so far.
  std::size_t received() const;
  // The header's TableName once the parser has read the header (soon after it has arrived),
  // so that what depends on it need not wait for the rest; nullopt before, or if it is bad.
  std::optional<std::string> table_name() const;
  // CPU time spent parsing (worker threads included).
  CpuAccount& cpu();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace assoc
