#pragma once
// A QVD file read while its bytes arrive (an upload): each part is parsed as soon as it is
// complete, so little is left to do once the last byte is in.
#include <cstddef>
#include <cstdint>
#include <memory>

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
  explicit QvdStream(std::size_t size);
  ~QvdStream();  // stops the parsing (waiting for the block it is on)
  QvdStream(const QvdStream&) = delete;
  QvdStream& operator=(const QvdStream&) = delete;

  // Appends bytes (copied; never blocks on parsing). Bytes past the declared size are kept too.
  void feed(const std::uint8_t* data, std::size_t n);
  // Waits for the parsing and returns what read_qvd returns for every byte fed: the same table,
  // or the same Error. Once only; the buffer is freed.
  LoadedTable finish();
  // Bytes fed so far.
  std::size_t received() const;
  // CPU time spent parsing (worker threads included).
  CpuAccount& cpu();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace assoc
