#pragma once
// The seeded random source of generation; (seed, index) replays a program exactly.
#include <cstdint>
#include <random>
#include <vector>

namespace tcfuzz::gen {

/// Seeded PRNG (mt19937_64) with the draws generation needs. Never shared between threads.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  /// The stream for program `index` of a campaign seeded with `seed`.
  static Rng forProgram(uint64_t seed, uint64_t index) {
    std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(index), uint32_t(index >> 32)};
    std::mt19937_64 e(seq);
    return Rng(e());
  }
  /// Uniform integer in [lo, hi] (both included); lo when hi < lo.
  int64_t uniform(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    return std::uniform_int_distribution<int64_t>(lo, hi)(engine_);
  }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(engine_); }
  bool chance(double p) { return real(0, 1) < p; }
  template <class T>
  const T& pick(const std::vector<T>& items) {
    return items[uniform(0, static_cast<int64_t>(items.size()) - 1)];
  }
  /// Index drawn with probability proportional to `weights` (all zero: uniform).
  size_t weighted(const std::vector<double>& weights);
  std::mt19937_64& engine() { return engine_; }

 private:
  std::mt19937_64 engine_;
};

inline size_t Rng::weighted(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w;
  if (total <= 0) return static_cast<size_t>(uniform(0, static_cast<int64_t>(weights.size()) - 1));
  double x = real(0, total);
  size_t lastDrawable = 0;  // rounding can leave x past the end: the last weight that may be drawn takes it
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    if (x < weights[i]) return i;
    x -= weights[i];
    lastDrawable = i;
  }
  return lastDrawable;
}

}  // namespace tcfuzz::gen
