#pragma once
// A night of the nightly cluster job (`tcfuzz merge`): the campaign directories of its shards (one
// `tcfuzz fuzz -o DIR` each, run apart) merged into one campaign directory, NIGHT, that `tcfuzz report`
// and `tcfuzz triage` accept: NIGHT/findings.sqlite holds every shard's programs and raw findings
// (hit counts are the raw findings per signature, summed over shards) and the triage rows the shards
// already made; NIGHT/shards.json and NIGHT/shards/<name>/ keep what each shard was. A missing or
// broken shard (a killed array task) is described and skipped.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracles/infra/SecretRedactor.h"

namespace tcfuzz {

/// What one shard directory held, read without changing it (a shard that is not "ok" holds nothing usable).
struct ShardInfo {
  std::filesystem::path path;  ///< as given
  std::string name;            ///< its folder's name (a later shard with the same name gets "-2", "-3" ...)
  std::string status = "ok";   ///< "ok", "missing" or "unreadable: <why>"
  std::string seed;            ///< the campaign seed as recorded ("" when unknown)
  std::string device;          ///< the campaign's --device ("" when unknown)
  std::string torch;           ///< the version its workers ran ("" when unknown)
  std::vector<std::string> devices;  ///< the CPU model, then each GPU its workers saw (when recorded)
  int64_t programs = 0, findings = 0, uniqueSignatures = 0;
  int64_t indexOffset = 0;     ///< its program indices in the night's store are shifted by this

  bool ok() const { return status == "ok"; }
  /// shards.json's entry: path, name, status, seed, device, devices, torch, programs, findings,
  /// unique_signatures, index_offset.
  nlohmann::json toJson() const;
};

/// Reads the facts of the campaign directory `dir` (findings.sqlite's meta and totals); never throws.
ShardInfo readShard(const std::filesystem::path& dir);

/// One exact signature of the night.
struct NightSignature {
  std::string id;                         ///< oracles::Signature id (the raw signature)
  std::string verdict;
  std::string key;                        ///< the signature's key line (symptom, type, message ...)
  int64_t hits = 0;                       ///< raw findings, all shards
  double firstSeen = 0, lastSeen = 0;     ///< unix time, over all shards
  std::map<std::string, int64_t> shards;  ///< shard name -> its hits
};

/// The outcome of mergeShards.
struct NightMerge {
  std::vector<ShardInfo> shards;             ///< in the order given, usable or not
  std::vector<NightSignature> signatures;    ///< oldest first
  int triageCarried = 0;                     ///< triage rows taken over from the shards or the last merge
  int64_t programs = 0, findings = 0;

  /// The shards' distinct torch versions, in order of first appearance.
  std::vector<std::string> torchVersions() const;
};

/// Rebuilds NIGHT/findings.sqlite from the usable shards of `shardDirs` (a second run rebuilds it: no
/// row is duplicated, and the triage rows of the last merge are kept), writes a first-witness folder
/// crashes/<signature id>/ per signature, NIGHT/fuzzer_stats (the totals), NIGHT/shards.json and
/// NIGHT/shards/<name>/{plot_data,fuzzer_stats}. Holds the directory's lock (CampaignOutput) while it
/// works. Throws std::invalid_argument when no shard is usable (naming each one's status).
NightMerge mergeShards(const std::vector<std::filesystem::path>& shardDirs, const std::filesystem::path& night,
                       const SecretRedactor& secrets);

}  // namespace tcfuzz
