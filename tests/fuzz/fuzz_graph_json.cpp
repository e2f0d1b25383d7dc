// libFuzzer target: the IR JSON parser, Graph::fromJson, on untrusted bytes (a program.json from disk).
// The API's documented failures are json::parse_error (the caller's json::parse) and GraphFormatError;
// anything else (another exception, an ASan or UBSan report) is a bug. A graph that parses must also
// survive its own round trip: toJson then fromJson gives the same JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "generators/ir/Graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  tcfuzz::gen::Graph g;
  try {
    g = tcfuzz::gen::Graph::fromJson(doc, "<fuzz>");
  } catch (const tcfuzz::gen::GraphFormatError&) {
    return 0;
  }
  const nlohmann::json again = g.toJson();
  if (tcfuzz::gen::Graph::fromJson(again, "<round trip>").toJson() != again) std::abort();
  return 0;
}
