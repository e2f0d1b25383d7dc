// The Python program in an LLM reply (pythonFromReply): apart from the
// proposer, because it is about the text a model writes, not about requests and the campaign.
#include "fuzzer/llm/ReplyText.h"

#include <sstream>

namespace tcfuzz {

namespace {

/// The code without an `if __name__ == "__main__":` block (a script habit, refused by the allowlist).
std::string withoutMainBlock(const std::string& code) {
  std::istringstream in(code);
  std::string line, out;
  bool skipping = false;
  while (std::getline(in, line)) {
    if (line.starts_with("if __name__")) {
      skipping = true;
      continue;
    }
    if (skipping && (line.empty() || line[0] == ' ' || line[0] == '\t')) continue;
    skipping = false;
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string pythonFromReply(const std::string& reply) {
  std::string code = reply;
  for (const char* fence : {"```python", "```py", "```"}) {
    size_t start = reply.find(fence);
    if (start == std::string::npos) continue;
    start = reply.find('\n', start);
    if (start == std::string::npos) return "";
    size_t end = reply.find("```", start + 1);
    code = reply.substr(start + 1, end == std::string::npos ? std::string::npos : end - start - 1);
    break;
  }
  code = withoutMainBlock(code);
  // Small models use torch, nn, F or math without importing them: the allowed imports are supplied.
  std::string imports;
  for (const char* line : {"import torch\n", "import torch.nn as nn\n", "import torch.nn.functional as F\n", "import math\n"})
    if (code.find(line) == std::string::npos) imports += line;
  return imports + code;
}

}  // namespace tcfuzz
