// libFuzzer target: an LLM's JSON-form reply (untrusted text) through extractJsonObject and
// proposalFromText, with the default catalog and caps. Neither documents an exception: a rejection is
// a reason in the outcome. Any exception, ASan or UBSan report is a bug. The same path parses the
// Python lift's proposal (RunResult::lift["proposal"] goes to buildProposal).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "generators/llm/LlmProgram.h"

using namespace tcfuzz::gen;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const OpCatalog catalog = makeDefaultCatalog();
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string why, detail;
  const auto doc = extractJsonObject(text, &why, &detail);
  if (doc.has_value() != why.empty()) std::abort();  // an object, or a reason: never both, never neither
  IntSolver solver(1);  // one per input: no state carries from one input to the next
  ProposalOutcome out = proposalFromText(text, catalog, ShapeCaps{}, 1, solver);
  if (out.graph.has_value() != out.rejection.empty()) std::abort();
  if (out.graph) (void)Graph::fromJson(out.graph->toJson(), "<accepted proposal>");  // accepted: a valid IR
  return 0;
}
