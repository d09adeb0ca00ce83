#pragma once
// A fixed pool of worker threads; parallel_for splits work into tasks the workers
// and the calling thread take from a shared counter.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace assoc {

// Sets the number of threads heavy work may use (the `Threads` setting); 0 = all logical cores.
void set_threads(unsigned n);
// The number of threads heavy work uses now.
unsigned threads();
// Logical cores of this machine (read once).
unsigned logical_cores();
// Physical memory of this machine, in bytes (read once).
std::uint64_t total_memory();

// CPU nanoseconds spent by the calling thread so far.
std::int64_t thread_cpu_ns();

// Adds up the CPU time that the threads working on one job spend.
class CpuAccount {
 public:
  void add(std::int64_t ns) { ns_.fetch_add(ns, std::memory_order_relaxed); }
  std::int64_t ns() const { return ns_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> ns_{0};
};

// Measures the calling thread's CPU time from construction to destruction into an account.
class CpuScope {
 public:
  explicit CpuScope(CpuAccount* account) : account_(account), start_(account ? thread_cpu_ns() : 0) {}
  ~CpuScope() {
    if (account_) account_->add(thread_cpu_ns() - start_);
  }
  CpuScope(const CpuScope&) = delete;
  CpuScope& operator=(const CpuScope&) = delete;

 private:
  CpuAccount* account_;
  std::int64_t start_;
};

// While one lives, parallel_for on its thread runs every task on that thread: for background
// work that should take no more than the one (low-priority) thread it runs on. Such a thread
// never starts the pool either: the workers would inherit its priority.
class SerialScope {
 public:
  SerialScope();
  ~SerialScope();
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;
};

// Lowers the calling thread's scheduling priority as far as it goes (Linux; elsewhere nothing),
// so that it runs only on CPU time other threads leave. Threads it starts inherit the
// priority, and without privileges it cannot be raised again: call it in a SerialScope.
void lower_thread_priority();

// Runs fn(task) for task in [0, n_tasks) on up to `threads()` threads, the caller included.
// Returns when all tasks are done; the first exception a task throws is rethrown here.
// Worker threads add their CPU time to `account` when one is given; the calling thread's
// time is not added (measure it with a CpuScope on the same account around the call).
void parallel_for(std::size_t n_tasks, const std::function<void(std::size_t)>& fn,
                  CpuAccount* account = nullptr);

// Splits [0, n) into about `threads()` * 4 chunks whose starts are multiples of `align`
// and calls fn(begin, end) for each, in parallel.
void parallel_ranges(std::size_t n, std::size_t align,
                     const std::function<void(std::size_t, std::size_t)>& fn,
                     CpuAccount* account = nullptr, std::size_t min_chunk = 1 << 14);

}  // namespace assoc
