#include "oracles/judge/OutputLoader.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

namespace tcfuzz::oracles {

namespace {

using nlohmann::json;

constexpr std::pair<const char*, c10::ScalarType> kDtypes[] = {
    {"BOOL", at::kBool},    {"U8", at::kByte},      {"I8", at::kChar},           {"I16", at::kShort},
    {"I32", at::kInt},      {"I64", at::kLong},     {"U16", at::kUInt16},        {"U32", at::kUInt32},
    {"U64", at::kUInt64},   {"F16", at::kHalf},     {"BF16", at::kBFloat16},     {"F32", at::kFloat},
    {"F64", at::kDouble},   {"F8_E4M3", at::kFloat8_e4m3fn}, {"F8_E5M2", at::kFloat8_e5m2},
};

c10::ScalarType dtypeOf(const std::string& code) {
  for (const auto& [name, type] : kDtypes)
    if (code == name) return type;
  throw std::invalid_argument("unknown dtype '" + code + "'");
}

const char* codeOf(c10::ScalarType type) {
  for (const auto& [name, t] : kDtypes)
    if (t == type) return name;
  throw std::invalid_argument(fmt::format("the tensor file has no dtype {}", c10::toString(type)));
}

}  // namespace

std::vector<at::Tensor> loadTensorFile(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw OutputLoadError(fmt::format("cannot open output file {}", file.string()));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) {
    return OutputLoadError(fmt::format("{} is not a readable tensor file: {}", file.string(), why));
  };
  if (bytes.size() < 8) throw bad("shorter than its 8-byte header length");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i) headerSize = (headerSize << 8) | static_cast<unsigned char>(bytes[i]);
  if (headerSize > bytes.size() - 8) throw bad(fmt::format("header length {} exceeds the file", headerSize));
  json header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(headerSize), nullptr,
                            /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) throw bad("its header is not a JSON object");
  const char* data = bytes.data() + 8 + headerSize;
  const uint64_t dataSize = bytes.size() - 8 - headerSize;
  size_t count = header.size() - (header.contains("__metadata__") ? 1 : 0);
  std::vector<at::Tensor> tensors;
  tensors.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    auto entry = header.find(std::to_string(i));
    if (entry == header.end() || !entry->is_object()) throw bad(fmt::format("tensor {} is missing", i));
    try {
      c10::ScalarType type = dtypeOf(entry->at("dtype").get<std::string>());
      std::vector<int64_t> shape = entry->at("shape").get<std::vector<int64_t>>();
      auto offsets = entry->at("data_offsets").get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > dataSize)
        throw std::invalid_argument("data_offsets outside the data");
      for (int64_t d : shape)
        if (d < 0) throw std::invalid_argument("a negative dimension");
      at::Tensor t = at::empty(shape, at::TensorOptions().dtype(type));
      uint64_t expected = static_cast<uint64_t>(t.numel()) * t.element_size();
      if (offsets[1] - offsets[0] != expected)
        throw std::invalid_argument(fmt::format("{} bytes for {} values of {}", offsets[1] - offsets[0], t.numel(),
                                                c10::toString(type)));
      if (expected) std::memcpy(t.data_ptr(), data + offsets[0], expected);
      tensors.push_back(std::move(t));
    } catch (const OutputLoadError&) {
      throw;
    } catch (const std::exception& e) {
      throw bad(fmt::format("tensor {}: {}", i, e.what()));
    }
  }
  return tensors;
}

void saveTensorFile(const std::filesystem::path& file, const std::vector<at::Tensor>& tensors) {
  json header{{"__metadata__", {{"format", "tcfuzz-tensors"}, {"version", "1"}}}};
  std::vector<at::Tensor> contiguous;
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    at::Tensor t = tensors[i].detach().to(at::kCPU).contiguous();
    uint64_t size = static_cast<uint64_t>(t.numel()) * t.element_size();
    header[std::to_string(i)] = {{"dtype", codeOf(t.scalar_type())}, {"shape", t.sizes().vec()},
                                 {"data_offsets", {offset, offset + size}}};
    offset += size;
    contiguous.push_back(std::move(t));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw OutputLoadError(fmt::format("cannot write tensor file {}", file.string()));
  uint64_t n = text.size();
  char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.write(length, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const at::Tensor& t : contiguous)
    out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.numel() * t.element_size()));
  if (!out) throw OutputLoadError(fmt::format("cannot write tensor file {}", file.string()));
}

}  // namespace tcfuzz::oracles

namespace tcfuzz::oracles {

LoadedOutputs loadOutputs(const OutputSet& set, const std::filesystem::path& jobDir) {
  LoadedOutputs loaded{set.leaves, loadTensorFile(jobDir / set.file)};
  for (const OutputLeaf& leaf : loaded.leaves) {
    if (leaf.kind != OutputLeaf::Kind::Other &&
        (leaf.index < 0 || static_cast<size_t>(leaf.index) >= loaded.tensors.size()))
      throw OutputLoadError(fmt::format("{}: leaf index {} out of range", (jobDir / set.file).string(), leaf.index));
  }
  return loaded;
}

}  // namespace tcfuzz::oracles
