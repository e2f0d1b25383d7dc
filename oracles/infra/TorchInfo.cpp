#include "oracles/infra/TorchInfo.h"

#include <cctype>

#include <fmt/format.h>

namespace tcfuzz::oracles {

using nlohmann::json;

json TorchInfo::toJson() const {
  return json{{"version", version}, {"git", git},       {"cuda", cuda},
              {"triton", triton},   {"python", python}, {"devices", devices}};
}

TorchInfo TorchInfo::fromJson(const json& j) {
  TorchInfo t;
  if (j.is_string()) {
    t.version = j.get<std::string>();
    return t;
  }
  if (!j.is_object()) return t;
  auto text = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  t.version = text("version");
  t.git = text("git");
  t.cuda = text("cuda");
  t.triton = text("triton");
  t.python = text("python");
  if (auto d = j.find("devices"); d != j.end() && d->is_array())
    for (const auto& name : *d)
      if (name.is_string()) t.devices.push_back(name.get<std::string>());
  return t;
}

std::string TorchInfo::summary() const {
  std::string s = "torch " + (version.empty() ? std::string("(version unknown)") : version);
  if (!git.empty()) s += fmt::format(" (git {})", git.substr(0, 12));
  s += cuda.empty() ? ", CPU build" : ", CUDA " + cuda;
  if (!triton.empty()) s += ", Triton " + triton;
  if (!python.empty()) s += ", Python " + python;
  return s;
}

std::string releaseOf(const std::string& version) { return version.substr(0, version.find('+')); }

std::vector<long long> versionKey(const std::string& version) {
  // Numeric fields of the release, then a pre-release marker: a .devN/aN/bN/rcN suffix sorts before
  // the final release of the same numbers (0 for a pre-release, 1 for a final one), then N.
  std::string release = releaseOf(version);
  std::vector<long long> key;
  size_t i = 0;
  while (i < release.size() && std::isdigit(static_cast<unsigned char>(release[i]))) {
    long long n = 0;
    while (i < release.size() && std::isdigit(static_cast<unsigned char>(release[i]))) n = n * 10 + (release[i++] - '0');
    key.push_back(n);
    if (i < release.size() && release[i] == '.' && i + 1 < release.size() &&
        std::isdigit(static_cast<unsigned char>(release[i + 1])))
      ++i;
    else
      break;
  }
  while (key.size() < 3) key.push_back(0);
  if (key.empty() || i == 0) return {-1};
  std::string rest = release.substr(i);
  if (rest.empty()) {
    key.push_back(1);
    return key;
  }
  key.push_back(0);
  long long n = 0;
  for (char c : rest)
    if (std::isdigit(static_cast<unsigned char>(c))) n = n * 10 + (c - '0');
  key.push_back(n);
  return key;
}

std::optional<std::string> unsupportedTorch(const std::string& version) {
  if (version.empty()) return std::string("it reported no torch version");
  std::vector<long long> key = versionKey(version);
  std::vector<long long> minimum = versionKey(kMinimumTorch);
  if (key.size() < 3 || key[0] < 0) return fmt::format("its torch version '{}' cannot be read", version);
  if (std::vector<long long>(key.begin(), key.begin() + 2) < std::vector<long long>(minimum.begin(), minimum.begin() + 2))
    return fmt::format("its torch {} is older than {}, the oldest tcfuzz supports", version, kMinimumTorch);
  return std::nullopt;
}

}  // namespace tcfuzz::oracles
