// libFuzzer target: the worker protocol decoder, decodeMessage, on one line from a worker (a worker
// runs untrusted programs and may be compromised or garbled). It documents WorkerRefused and
// ProtocolError; any other exception, an ASan or UBSan report is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzzer/worker/Protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  try {
    (void)tcfuzz::decodeMessage(line);
  } catch (const tcfuzz::WorkerRefused&) {
  } catch (const tcfuzz::ProtocolError&) {
  }
  return 0;
}
