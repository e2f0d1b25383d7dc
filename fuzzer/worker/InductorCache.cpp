#include "fuzzer/worker/InductorCache.h"

#include <algorithm>
#include <string>
#include <system_error>
#include <vector>

namespace tcfuzz {

namespace fs = std::filesystem;

namespace {

struct CacheEntry {
  fs::path path;
  uint64_t bytes = 0;
  fs::file_time_type newest = fs::file_time_type::min();
};

/// Adds the regular files under (or at) `path` to `entry`.
void measure(const fs::path& path, CacheEntry& entry) {
  std::error_code ec;
  auto add = [&](const fs::directory_entry& f) {
    std::error_code fe;
    if (!f.is_regular_file(fe) || fe) return;
    entry.bytes += f.file_size(fe);
    auto t = f.last_write_time(fe);
    if (!fe) entry.newest = std::max(entry.newest, t);
  };
  fs::directory_entry top(path, ec);
  if (ec) return;
  if (!top.is_directory(ec)) {
    add(top);
    return;
  }
  for (fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec))
    add(*it);
}

}  // namespace

CacheTrim trimCache(const fs::path& dir, uint64_t capBytes, std::chrono::seconds minAge) {
  CacheTrim trim;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return trim;
  std::vector<CacheEntry> entries;
  for (fs::directory_iterator top(dir, ec), end; !ec && top != end; top.increment(ec)) {
    std::error_code te;
    if (!top->is_directory(te)) {
      entries.push_back({top->path()});
      continue;
    }
    for (fs::directory_iterator sub(top->path(), te), subEnd; !te && sub != subEnd; sub.increment(te))
      entries.push_back({sub->path()});
  }
  for (auto& e : entries) {
    measure(e.path, e);
    trim.bytesBefore += e.bytes;
  }
  trim.bytesAfter = trim.bytesBefore;
  if (capBytes == 0 || trim.bytesBefore <= capBytes) return trim;
  std::sort(entries.begin(), entries.end(), [](const CacheEntry& a, const CacheEntry& b) { return a.newest < b.newest; });
  auto keepFrom = fs::file_time_type::clock::now() - minAge;
  uint64_t target = capBytes / 10 * 9;
  for (const auto& e : entries) {
    if (trim.bytesAfter <= target) break;
    if (e.newest > keepFrom) continue;
    std::error_code re;
    fs::remove_all(e.path, re);
    if (re) continue;
    trim.bytesAfter -= std::min(trim.bytesAfter, e.bytes);
    trim.entriesRemoved++;
  }
  return trim;
}

}  // namespace tcfuzz
