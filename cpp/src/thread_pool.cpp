#include "assoc/thread_pool.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "assoc/thread_name.hpp"

namespace assoc {
namespace {

class Pool;

thread_local unsigned serial_depth = 0;  // SerialScopes alive on this thread

struct Job {
  const std::function<void(std::size_t)>* fn = nullptr;
  std::size_t n = 0;
  CpuAccount* account = nullptr;
  Pool* pool = nullptr;  // told when the last task is done
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::exception_ptr error;

  bool claimable() const { return next.load(std::memory_order_relaxed) < n; }
  bool finished() const { return done.load(std::memory_order_acquire) >= n; }
  // Runs tasks until none is left to claim; returns after the last claimed one. Workers
  // charge each task's CPU time to `charge`; a thread that runs its own job (or helps one of
  // the same account while it waits) passes none, since its CpuScope counts it already.
  void work(CpuAccount* charge);
};

class Pool {
 public:
  explicit Pool(unsigned n_threads) : n_threads_(std::max(1U, n_threads)) {
    for (unsigned i = 1; i < n_threads_; ++i) {
      workers_.emplace_back([this] { loop(); });
      name_thread(workers_.back(), "assoc-pool-" + std::to_string(i));
    }
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  unsigned size() const { return n_threads_; }

  void run(const std::shared_ptr<Job>& job) {
    if (workers_.empty() || job->n <= 1) {
      job->work(nullptr);
      return;
    }
    job->pool = this;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(job);
    }
    wake_.notify_all();
    help_.notify_all();
    job->work(nullptr);
    // Tasks that workers claimed may still run, and a task that calls parallel_for queues a
    // job of its own: help with those (jobs of the same account) rather than wait idle, or a
    // nested job would get one thread while this one sleeps.
    std::unique_lock<std::mutex> lock(mutex_);
    while (!job->finished()) {
      std::shared_ptr<Job> other;
      for (const auto& q : queue_)
        if (q != job && q->account == job->account && q->claimable()) {
          other = q;
          break;
        }
      if (other) {
        lock.unlock();
        other->work(nullptr);
        lock.lock();
      } else {
        help_.wait(lock);  // a new job, or a job's last task done
      }
    }
    auto it = std::find(queue_.begin(), queue_.end(), job);
    if (it != queue_.end()) queue_.erase(it);
  }

  // Wakes threads waiting in run(): a job's last task is done.
  void job_done() {
    { std::lock_guard<std::mutex> lock(mutex_); }  // a waiter has either seen it or is waiting
    help_.notify_all();
  }

 private:
  void loop() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
          if (stop_) return;
          while (!queue_.empty() && !queue_.front()->claimable()) queue_.pop_front();
          if (!queue_.empty()) break;
          wake_.wait(lock);
        }
        job = queue_.front();
      }
      job->work(job->account);
    }
  }

  unsigned n_threads_;
  std::vector<std::thread> workers_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::mutex mutex_;
  std::condition_variable wake_;  // idle workers: a new job
  std::condition_variable help_;  // threads waiting in run(): a new job, or a job done
  bool stop_ = false;
};

void Job::work(CpuAccount* charge) {
  for (;;) {
    const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
    if (i >= n) return;
    {
      // Charged per task, before the task counts as done: once the last one is done the
      // caller returns and the account may be gone.
      CpuScope scope(charge);
      if (!failed.load(std::memory_order_relaxed)) {  // after a failure the rest are only counted
        try {
          (*fn)(i);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mutex);
          if (!error) error = std::current_exception();
          failed.store(true, std::memory_order_relaxed);
        }
      }
    }
    if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == n && pool != nullptr) pool->job_done();
  }
}

std::mutex g_pool_mutex;
std::shared_ptr<Pool> g_pool;
unsigned g_threads = 0;  // 0 = all logical cores

std::shared_ptr<Pool> pool() {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  if (!g_pool) g_pool = std::make_shared<Pool>(g_threads ? g_threads : logical_cores());
  return g_pool;
}

}  // namespace

SerialScope::SerialScope() { ++serial_depth; }
SerialScope::~SerialScope() { --serial_depth; }

namespace {

void name_pthread([[maybe_unused]] pthread_t thread, [[maybe_unused]] const std::string& name) {
#ifdef __linux__
  pthread_setname_np(thread, name.substr(0, 15).c_str());  // fails only past 15 bytes
#endif
}

}  // namespace

void name_this_thread(const std::string& name) { name_pthread(pthread_self(), name); }

void name_thread(std::thread& thread, const std::string& name) { name_pthread(thread.native_handle(), name); }

void lower_thread_priority() {
#if defined(__linux__) && defined(SYS_gettid)
  // On Linux a nice value is per thread; 19 is the lowest priority.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
#endif
}

// Both are read once per process (each costs system calls, and every model built records them).
unsigned logical_cores() {
  static const unsigned cores = [] {
    const unsigned n = std::thread::hardware_concurrency();
    return n ? n : 1;
  }();
  return cores;
}

std::uint64_t total_memory() {
  static const std::uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
  }();
  return bytes;
}

void set_threads(unsigned n) {
  std::shared_ptr<Pool> old;
  {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    g_threads = n;
    old = std::move(g_pool);  // jobs running on it finish; new jobs get a new pool
  }
}

// A thread in a SerialScope never starts the pool: its workers would inherit the thread's
// priority, which may be lowered (lower_thread_priority), and keep it for good.
unsigned threads() { return serial_depth > 0 ? 1 : pool()->size(); }

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

void parallel_for(std::size_t n_tasks, const std::function<void(std::size_t)>& fn, CpuAccount* account) {
  if (n_tasks == 0) return;
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n_tasks;
  job->account = account;
  if (serial_depth > 0) {
    job->work(nullptr);  // see threads(): no pool here
  } else {
    pool()->run(job);
  }
  if (job->error) std::rethrow_exception(job->error);
}

void parallel_ranges(std::size_t n, std::size_t align, const std::function<void(std::size_t, std::size_t)>& fn,
                     CpuAccount* account, std::size_t min_chunk) {
  if (n == 0) return;
  align = std::max<std::size_t>(align, 1);
  const std::size_t max_chunks = static_cast<std::size_t>(threads()) * 4;
  std::size_t chunks = std::min(max_chunks, (n + min_chunk - 1) / std::max<std::size_t>(min_chunk, 1));
  chunks = std::max<std::size_t>(chunks, 1);
  std::size_t step = (n + chunks - 1) / chunks;
  step = (step + align - 1) / align * align;
  chunks = (n + step - 1) / step;
  parallel_for(
      chunks, [&](std::size_t c) { fn(c * step, std::min(n, (c + 1) * step)); }, account);
}

}  // namespace assoc
