#include "corgy/backends/cpu/cpu_profiler.h"

#include <utility>

namespace corgy::cpu {

void CpuProfiler::set_enabled(bool enabled) {
  enabled_ = enabled;
  open_ = false;
  entries_.clear();
}

void CpuProfiler::close_open_entry() {
  if (!open_) return;
  current_.ms = std::chrono::duration<double, std::milli>(Clock::now() - started_).count();
  entries_.push_back(std::move(current_));
  open_ = false;
}

void CpuProfiler::begin_layer(int index) {
  if (!enabled_) return;
  close_open_entry();
  if (index < 0) return;
  current_ = OpProfile{index, {}, 0.0};
  open_ = true;
  started_ = Clock::now();
}

void CpuProfiler::note(std::string_view algorithm) {
  if (!enabled_ || muted_ > 0) return;
  if (!open_) {
    // An operation called outside a model's forward: an entry of its own, timed from here.
    current_ = OpProfile{-1, {}, 0.0};
    open_ = true;
    started_ = Clock::now();
  }
  if (!current_.algorithm.empty()) current_.algorithm += " + ";
  current_.algorithm += algorithm;
}

std::vector<OpProfile> CpuProfiler::take() {
  close_open_entry();
  return std::exchange(entries_, {});
}

}  // namespace corgy::cpu
