#pragma once
// The Python program in an LLM reply: text handling only, no proposer machinery (the parser fuzz
// target tests/fuzz/fuzz_llm_python.cpp builds it alone). LlmProposer.h includes this header.
#include <string>

namespace tcfuzz {

/// The Python program in an LLM reply: the first ```python (or ```) fenced block, else the whole text,
/// without an `if __name__` block, after the allowed imports it lacks (torch, nn, F, math).
std::string pythonFromReply(const std::string& reply);

}  // namespace tcfuzz
