// The upload's file: the writer thread writes what the buffer holds, in the largest whole
// pages there are, while the buffer goes on filling.
#include "stream_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "assoc/error.hpp"
#include "assoc/thread_name.hpp"

namespace assoc::detail {
namespace {

// Direct I/O wants buffer addresses, file offsets and lengths in whole blocks of the device;
// a page is a whole number of blocks on every device that takes it.
constexpr std::size_t kPage = 4096;
// Smaller files go through the page cache: direct I/O would save little and their buffers are
// not page-aligned.
constexpr std::size_t kDirectMinBytes = std::size_t{1} << 20;
// The writer is woken once this many bytes wait (a wake-up per chunk of the upload would cost
// a futex call and two context switches each).
constexpr std::size_t kWakeBytes = std::size_t{1} << 18;
// One write's most bytes: the writer checks for a stop between writes.
constexpr std::size_t kMaxWriteBytes = std::size_t{4} << 20;

[[noreturn]] void fail(const std::string& path) { throw FileError(errno, path); }

}  // namespace

StreamFile::StreamFile(std::string path, const std::uint8_t* buffer, std::size_t size, bool sync)
    : path_(std::move(path)), buffer_(buffer), size_(size), sync_(sync) {
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
#ifdef O_DIRECT
  if (size >= kDirectMinBytes && reinterpret_cast<std::uintptr_t>(buffer) % kPage == 0) {
    fd_ = ::open(path_.c_str(), kFlags | O_DIRECT, 0666);
    direct_ = fd_ >= 0;
    if (fd_ < 0 && errno != EINVAL) fail(path_);  // EINVAL: the file system has no direct I/O
  }
#endif
  if (fd_ < 0) fd_ = ::open(path_.c_str(), kFlags, 0666);
  if (fd_ < 0) fail(path_);
#ifdef __linux__
  // Disk space for every byte now, so that a full disk fails the upload before it is received.
  if (size > 0 && ::fallocate(fd_, 0, 0, static_cast<off_t>(size)) != 0 && errno != EOPNOTSUPP && errno != ENOSYS) {
    const int error = errno;
    ::close(fd_);
    ::unlink(path_.c_str());
    errno = error;
    fail(path_);
  }
#endif
  try {
    writer_ = std::thread([this] { write_loop(); });
  } catch (...) {
    ::close(fd_);
    ::unlink(path_.c_str());
    throw;
  }
  name_thread(writer_, "assoc-file-write");
}

StreamFile::~StreamFile() {
  stop();
  if (fd_ >= 0) ::close(fd_);
}

void StreamFile::stop() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
}

void StreamFile::filled(std::size_t n) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    filled_ = n;
  }
  if (n - woken_at_ >= kWakeBytes || n == size_) {
    woken_at_ = n;
    wake_.notify_one();
  }
}

void StreamFile::end(const std::uint8_t* extra, std::size_t extra_size) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ending_ = true;
    extra_ = extra;
    extra_size_ = extra_size;
  }
  wake_.notify_one();
}

void StreamFile::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ending_ = true;
  }
  wake_.notify_one();
  if (writer_.joinable()) writer_.join();
  const int fd = std::exchange(fd_, -1);
  if (error_) {
    ::close(fd);
    std::rethrow_exception(error_);
  }
  if (::close(fd) != 0) fail(path_);
}

void StreamFile::write_loop() {
  try {
    for (;;) {
      std::size_t filled;
      bool ending;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        // Direct I/O writes whole pages only; the last partial one waits for the end.
        wake_.wait(lock, [&] {
          return stopping_ || ending_ || (direct_ ? filled_ / kPage * kPage : filled_) > written_;
        });
        if (stopping_) return;
        filled = filled_;
        ending = ending_;
      }
      const std::size_t end = ending || !direct_ ? filled : filled / kPage * kPage;
      if (end > written_) write_range(end);
      if (ending) break;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;  // the file is being dropped
    }
    const std::size_t length = written_ + extra_size_;
    if (extra_size_ > 0) {
      use_page_cache();
      write_at(extra_, extra_size_, written_);
    }
    // fallocate made the file `size_` bytes long: fewer bytes may have come, or more.
    if (length != size_ && ::ftruncate(fd_, static_cast<off_t>(length)) != 0) fail(path_);
    // The data and what reading it needs (its length, where it lies): not the timestamps.
    if (sync_ && ::fdatasync(fd_) != 0) fail(path_);
  } catch (...) {
    error_ = std::current_exception();
  }
}

void StreamFile::write_range(std::size_t end) {
  while (written_ < end) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
    }
    std::size_t n = std::min(end - written_, kMaxWriteBytes);
    if (direct_ && n % kPage != 0) {
      if (n >= kPage) {
        n = n / kPage * kPage;
      } else {
        // The last partial page, at the end only (nothing past it is filled).
        use_page_cache();
      }
    }
    write_at(buffer_ + written_, n, written_);
#ifdef __linux__
    // Only a head start for the caller's fsync (its error is the fsync's to report).
    if (!direct_) ::sync_file_range(fd_, static_cast<off_t>(written_), static_cast<off_t>(n), SYNC_FILE_RANGE_WRITE);
#endif
    written_ += n;
  }
}

void StreamFile::write_at(const std::uint8_t* data, std::size_t n, std::size_t offset) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_, data, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && direct_) {
        // A file system that opens with O_DIRECT but refuses these writes.
        use_page_cache();
        continue;
      }
      fail(path_);
    }
    data += w;
    n -= static_cast<std::size_t>(w);
    offset += static_cast<std::size_t>(w);
  }
}

void StreamFile::use_page_cache() {
#ifdef O_DIRECT
  if (!direct_) return;
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) != 0) fail(path_);
  direct_ = false;
#endif
}

}  // namespace assoc::detail
