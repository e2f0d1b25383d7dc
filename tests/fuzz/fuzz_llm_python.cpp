// libFuzzer target: the Python front end's text extraction, pythonFromReply, on an LLM's reply
// (untrusted text). It documents no failure; any exception, ASan or UBSan report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzzer/llm/ReplyText.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string reply(reinterpret_cast<const char*>(data), size);
  (void)tcfuzz::pythonFromReply(reply);
  return 0;
}
