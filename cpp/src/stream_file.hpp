#pragma once
// A new file written from a buffer that fills up front to back (an upload as it arrives), by a
// thread of its own, so that whoever fills the buffer never waits for the disk.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

namespace assoc::detail {

class StreamFile {
 public:
  // Creates `path` (it must not exist) for the bytes of `buffer`, which holds `size` bytes once
  // full, and reserves `size` bytes of disk for it: a full disk is reported here, before any
  // byte has arrived. Errors are FileError. When the buffer starts on a page boundary,
  // whole pages are written with direct I/O (from the buffer to the disk, without a copy in
  // the page cache); where direct I/O is refused, and for the last partial page, through the
  // page cache, each range handed to the disk as soon as it is written.
  // With `sync`, the writer also flushes the file to disk (fdatasync) once it has written it.
  StreamFile(std::string path, const std::uint8_t* buffer, std::size_t size, bool sync);
  ~StreamFile();  // stops writing (after the write under way) and closes the file
  StreamFile(const StreamFile&) = delete;
  StreamFile& operator=(const StreamFile&) = delete;

  // The first `n` bytes of the buffer are final (n only grows); the writer is woken once enough
  // of them wait to be written.
  void filled(std::size_t n);
  // No more bytes will be filled: the writer writes the rest, then `extra` (bytes past the
  // buffer's size, valid until close() returns), and cuts the file to what it wrote.
  void end(const std::uint8_t* extra, std::size_t extra_size);
  // Waits for the writer and closes the file; throws FileError if any write (or the flush)
  // failed. The file is then complete, and with `sync` on disk.
  void close();

 private:
  void write_loop();
  // Writes buffer bytes [written_, end), whole pages with direct I/O; a partial page (the
  // last) through the page cache.
  void write_range(std::size_t end);
  void write_at(const std::uint8_t* data, std::size_t n, std::size_t offset);
  void use_page_cache();
  void stop() noexcept;

  std::string path_;
  const std::uint8_t* buffer_;
  std::size_t size_;
  bool sync_;
  int fd_ = -1;
  bool direct_ = false;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::size_t filled_ = 0;    // published under mutex_
  std::size_t woken_at_ = 0;  // filled_ when filled() last woke the writer (filled()'s own)
  bool ending_ = false, stopping_ = false;
  const std::uint8_t* extra_ = nullptr;
  std::size_t extra_size_ = 0;
  std::size_t written_ = 0;   // the writer's own until it has stopped
  std::exception_ptr error_;  // the failed write, for close()
  std::thread writer_;
};

}  // namespace assoc::detail
