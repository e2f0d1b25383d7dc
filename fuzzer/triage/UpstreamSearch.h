#pragma once
// --check-upstream: asks GitHub's issue search API which pytorch/pytorch issues, open and closed, are
// closest to a bug (its KnownUpstream search terms). Off by default: it needs the network, and an
// optional token read from an environment variable (GITHUB_TOKEN) lifts the API's rate limit.
#include <stdexcept>
#include <string>
#include <vector>

#include "oracles/reporter/BugReport.h"

namespace tcfuzz {

/// The API could not be reached, or refused (no network, DNS, TLS, timeout, rate limit).
struct UpstreamUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class UpstreamSearch {
 public:
  /// `apiBase` is the API root ("https://api.github.com"); `token` may be empty; each request gives up
  /// after `timeoutSeconds` (connecting within a third of it).
  UpstreamSearch(std::string apiBase, std::string token, double timeoutSeconds);

  /// Checks that the API answers (its rate-limit endpoint); throws UpstreamUnavailable saying why not.
  void checkReachable() const;
  /// Up to `count` issues of pytorch/pytorch matching `terms`, best first. Throws UpstreamUnavailable
  /// when the API cannot be reached or refuses (a rate limit included).
  std::vector<oracles::UpstreamIssue> closest(const std::string& terms, int count) const;

 private:
  /// GET `pathAndQuery` below the API root: the body of a 200 answer; throws UpstreamUnavailable otherwise.
  std::string get(const std::string& pathAndQuery) const;

  std::string apiBase_, token_;
  double timeoutSeconds_;
};

}  // namespace tcfuzz
