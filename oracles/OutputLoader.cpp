#include "oracles/OutputLoader.h"

#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <torch/serialize.h>

namespace tcfuzz::oracles {

std::vector<at::Tensor> loadSavedTensors(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw OutputLoadError(fmt::format("cannot open output file {}", file.string()));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    throw OutputLoadError(fmt::format("{} is not a readable torch.save file: {}", file.string(),
                                      std::string(e.what()).substr(0, 300)));
  }
  if (!value.isList()) throw OutputLoadError(fmt::format("{} does not hold a list", file.string()));
  std::vector<at::Tensor> tensors;
  for (const c10::IValue& item : value.toListRef()) {
    if (!item.isTensor()) throw OutputLoadError(fmt::format("{} holds a non-tensor item", file.string()));
    tensors.push_back(item.toTensor());
  }
  return tensors;
}

}  // namespace tcfuzz::oracles

namespace tcfuzz::oracles {

LoadedOutputs loadOutputs(const OutputSet& set, const std::filesystem::path& jobDir) {
  LoadedOutputs loaded{set.leaves, loadSavedTensors(jobDir / set.file)};
  for (const OutputLeaf& leaf : loaded.leaves) {
    if (leaf.kind != OutputLeaf::Kind::Other &&
        (leaf.index < 0 || static_cast<size_t>(leaf.index) >= loaded.tensors.size()))
      throw OutputLoadError(fmt::format("{}: leaf index {} out of range", (jobDir / set.file).string(), leaf.index));
  }
  return loaded;
}

}  // namespace tcfuzz::oracles
