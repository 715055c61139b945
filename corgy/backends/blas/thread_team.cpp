#include "corgy/backends/blas/thread_team.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>

#include "corgy/error.h"

namespace corgy::blas {

namespace {

/// How long a thread spins for the next task or a barrier before it sleeps.
constexpr std::chrono::microseconds kSpinTime{50};

/// Spins while `waiting()` holds, for at most kSpinTime and only while `member` has a CPU to itself among members
/// [0, count); returns whether it still holds (the caller then sleeps).
template <class Condition>
bool spin_while(const Condition& waiting, CpuPlacement& placement, int member, int count) {
  const auto start = std::chrono::steady_clock::now();
  for (unsigned i = 0;; ++i) {
    if (!waiting()) return false;
    if (i % 64 == 0) {
      placement.note(member);
      if (!placement.alone(member, count) || std::chrono::steady_clock::now() - start > kSpinTime) return waiting();
    }
    __builtin_ia32_pause();
  }
}

/// The CPUs the process may run on (empty when it may use only one: pinning would gain nothing).
std::vector<int> allowed_cpus() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < 2) return {};
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  return cpus;
}

bool pin_thread(pthread_t thread, int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(thread, sizeof(one), &one) == 0;
}

/// Worker slots handed out across all teams, so that teams of several backends spread over the CPUs.
std::atomic<unsigned> next_worker_slot{1};

}  // namespace

CpuPlacement::CpuPlacement(int members) : cpus_(std::make_unique<std::atomic<int>[]>(members)), members_(members) {
  for (int i = 0; i < members; ++i) cpus_[i].store(-1, std::memory_order_relaxed);
}

void CpuPlacement::note(int member) { cpus_[member].store(sched_getcpu(), std::memory_order_relaxed); }

bool CpuPlacement::alone(int member, int count) const {
  const int mine = cpus_[member].load(std::memory_order_relaxed);
  for (int other = 0; other < std::min(count, members_); ++other) {
    if (other != member && cpus_[other].load(std::memory_order_relaxed) == mine) return false;
  }
  return true;
}

void SpinBarrier::arrive_and_wait(int member) {
  const std::uint32_t phase = phase_.load(std::memory_order_acquire);
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // The last to arrive: reset for the next use before anyone can see the new phase.
    remaining_.store(count_, std::memory_order_relaxed);
    phase_.fetch_add(1, std::memory_order_release);
    phase_.notify_all();
    return;
  }
  const auto same_phase = [&] { return phase_.load(std::memory_order_acquire) == phase; };
  if (spin_while(same_phase, *placement_, member, count_)) {
    while (same_phase()) phase_.wait(phase, std::memory_order_acquire);
  }
}

TeamMember::Range TeamMember::share(std::size_t total, std::size_t granule) const {
  const std::size_t granules = (total + granule - 1) / granule;
  const std::size_t per_member = (granules + count_ - 1) / count_ * granule;
  const std::size_t begin = std::min(total, per_member * index_);
  return {begin, std::min(total, begin + per_member)};
}

namespace {

constexpr std::uint64_t pack_range(std::uint64_t begin, std::uint64_t end) { return begin << 32 | end; }
constexpr std::uint64_t range_begin(std::uint64_t range) { return range >> 32; }
constexpr std::uint64_t range_end(std::uint64_t range) { return range & 0xffffffffu; }

}  // namespace

WorkQueue::WorkQueue(std::size_t count, int members)
    : remaining_(std::make_unique<Remaining[]>(std::max(members, 1))), members_(std::max(members, 1)) {
  if (count > 0xffffffffu) throw Error(fmt::format("thread team: {} work items do not fit 32 bits", count));
  for (int i = 0; i < members_; ++i) {
    const TeamMember::Range share = TeamMember(i, members_, nullptr).share(count);
    remaining_[i].range.store(pack_range(share.begin, share.end), std::memory_order_relaxed);
  }
}

bool WorkQueue::next(const TeamMember& member, std::size_t& item) {
  std::atomic<std::uint64_t>& own = remaining_[member.index()].range;
  std::uint64_t range = own.load(std::memory_order_relaxed);
  while (range_begin(range) < range_end(range)) {
    if (own.compare_exchange_weak(range, pack_range(range_begin(range) + 1, range_end(range)),
                                  std::memory_order_relaxed)) {
      item = range_begin(range);
      return true;
    }
  }
  // Its own share is done: the last item of the member with the most left, until no member has any.
  for (;;) {
    int victim = -1;
    std::uint64_t most = 0, victim_range = 0;
    for (int i = 0; i < members_; ++i) {
      const std::uint64_t r = remaining_[i].range.load(std::memory_order_relaxed);
      if (range_begin(r) < range_end(r) && range_end(r) - range_begin(r) > most) {
        most = range_end(r) - range_begin(r);
        victim = i;
        victim_range = r;
      }
    }
    if (victim < 0) return false;
    if (remaining_[victim].range.compare_exchange_strong(
            victim_range, pack_range(range_begin(victim_range), range_end(victim_range) - 1),
            std::memory_order_relaxed)) {
      item = range_end(victim_range) - 1;
      return true;
    }
  }
}

ThreadTeam::ThreadTeam(int size, bool pin_workers) : size_(std::max(size, 1)), placement_(size_) {
  const std::vector<int> cpus = pin_workers ? allowed_cpus() : std::vector<int>{};
  workers_.reserve(size_ - 1);
  for (int index = 1; index < size_; ++index) {
    const unsigned slot = next_worker_slot.fetch_add(1, std::memory_order_relaxed);
    workers_.emplace_back([this, index] { work(index); });
    int cpu = -1;
    if (!cpus.empty()) {
      cpu = cpus[slot % cpus.size()];
      if (!pin_thread(workers_.back().native_handle(), cpu)) cpu = -1;
    }
    worker_cpus_.push_back(cpu);
  }
  allowed_cpus_ = pin_workers ? cpus : std::vector<int>{};
}

void ThreadTeam::move_workers_off_callers_cpu(int count) {
  const int here = sched_getcpu();
  for (int worker = 0; worker + 1 < count; ++worker) {
    if (worker_cpus_[worker] != here) continue;
    // The allowed CPU, other than the caller's, with the fewest of this team's workers.
    int best = -1;
    long fewest = 0;
    for (int cpu : allowed_cpus_) {
      if (cpu == here) continue;
      const long on_it = std::count(worker_cpus_.begin(), worker_cpus_.end(), cpu);
      if (best < 0 || on_it < fewest) best = cpu, fewest = on_it;
    }
    if (best >= 0 && pin_thread(workers_[worker].native_handle(), best)) worker_cpus_[worker] = best;
  }
}

ThreadTeam::~ThreadTeam() {
  stopping_ = true;
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadTeam::run(int count, const std::function<void(const TeamMember&)>& task) {
  count = std::clamp(count, 1, size());
  if (count == 1) {
    task(TeamMember(0, 1, nullptr));
    return;
  }
  if (!allowed_cpus_.empty()) move_workers_off_callers_cpu(count);
  task_ = &task;
  count_ = count;
  barrier_.emplace(count, &placement_);
  // Every worker wakes and reports back, those outside the task too, so none can still be reading this task's
  // state when the next run() changes it.
  unfinished_workers_.store(size_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  task(TeamMember(0, count, &*barrier_));
  const auto workers_busy = [&] { return unfinished_workers_.load(std::memory_order_acquire) != 0; };
  if (spin_while(workers_busy, placement_, 0, count)) {
    for (int left = unfinished_workers_.load(std::memory_order_acquire); left != 0;
         left = unfinished_workers_.load(std::memory_order_acquire)) {
      unfinished_workers_.wait(left, std::memory_order_acquire);
    }
  }
}

void ThreadTeam::work(int index) {
  std::uint32_t seen = 0;
  while (true) {
    const auto no_new_task = [&] { return generation_.load(std::memory_order_acquire) == seen; };
    if (spin_while(no_new_task, placement_, index, size())) generation_.wait(seen, std::memory_order_acquire);
    seen = generation_.load(std::memory_order_acquire);
    if (stopping_) return;
    if (index < count_) (*task_)(TeamMember(index, count_, &*barrier_));
    if (unfinished_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) unfinished_workers_.notify_one();
  }
}

}  // namespace corgy::blas
