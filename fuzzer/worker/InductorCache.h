#pragma once
// A campaign's Inductor cache (TORCHINDUCTOR_CACHE_DIR) held under a size cap, least recently used first:
// without one it grows by about 0.6 MB per program, several GB per shard of a nightly job.
#include <chrono>
#include <cstdint>
#include <filesystem>

namespace tcfuzz {

/// What one trim found and did.
struct CacheTrim {
  uint64_t bytesBefore = 0, bytesAfter = 0;
  int64_t entriesRemoved = 0;
};

/// Sizes `dir` (every regular file under it) and, when it holds more than `capBytes`, removes its entries
/// least recently written first until it holds at most 90% of the cap. An entry is what lies two levels down
/// (`<dir>/fxgraph/<key>`, `<dir>/<2 chars>/<hash>.so`; a file one level down is one too), and its age is its
/// newest file's. Entries written within `minAge` stay (a worker may be writing them now). A cap of 0 trims
/// nothing; a missing `dir` is empty. Never throws: what cannot be read or removed is left.
CacheTrim trimCache(const std::filesystem::path& dir, uint64_t capBytes, std::chrono::seconds minAge);

}  // namespace tcfuzz
