#include "fuzzer/triage/UpstreamSearch.h"

#include <cctype>
#include <memory>

#include <curl/curl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tcfuzz {

namespace {

size_t appendBody(char* data, size_t size, size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

std::string queryEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

}  // namespace

UpstreamSearch::UpstreamSearch(std::string apiBase, std::string token, double timeoutSeconds)
    : apiBase_(std::move(apiBase)), token_(std::move(token)), timeoutSeconds_(timeoutSeconds) {
  while (!apiBase_.empty() && apiBase_.back() == '/') apiBase_.pop_back();
}

std::string UpstreamSearch::get(const std::string& pathAndQuery) const {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw UpstreamUnavailable("--check-upstream: cannot initialise libcurl");
  std::string url = apiBase_ + pathAndQuery, body;
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/vnd.github+json");
  headers = curl_slist_append(headers, "User-Agent: tcfuzz");
  if (!token_.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + token_).c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headerList(headers, curl_slist_free_all);
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, appendBody);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeoutSeconds_ * 1000));
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeoutSeconds_ * 1000 / 3));
  CURLcode code = curl_easy_perform(curl.get());
  if (code != CURLE_OK)
    throw UpstreamUnavailable(fmt::format("--check-upstream: cannot reach {}: {} (the check needs the network; "
                                          "run without --check-upstream offline)",
                                          apiBase_, curl_easy_strerror(code)));
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status == 403 || status == 429)
    throw UpstreamUnavailable(fmt::format("--check-upstream: {} refused with HTTP {} (rate limited; a token in "
                                          "GITHUB_TOKEN raises the limit)",
                                          apiBase_, status));
  if (status != 200)
    throw UpstreamUnavailable(fmt::format("--check-upstream: {} answered HTTP {}", url, status));
  return body;
}

void UpstreamSearch::checkReachable() const { get("/rate_limit"); }

std::vector<oracles::UpstreamIssue> UpstreamSearch::closest(const std::string& terms, int count) const {
  std::string body = get(fmt::format("/search/issues?q={}&per_page={}",
                                     queryEncode(terms + " repo:pytorch/pytorch is:issue"), count));
  nlohmann::json reply = nlohmann::json::parse(body, nullptr, false);
  std::vector<oracles::UpstreamIssue> issues;
  if (!reply.is_object() || !reply.contains("items") || !reply["items"].is_array())
    throw UpstreamUnavailable("--check-upstream: the search API's answer holds no \"items\" array");
  for (const auto& item : reply["items"]) {
    if (!item.is_object() || !item.contains("number") || !item["number"].is_number_integer()) continue;
    oracles::UpstreamIssue i;
    i.number = item["number"].get<int64_t>();
    i.title = item.value("title", "");
    i.state = item.value("state", "");
    i.url = item.value("html_url", fmt::format("https://github.com/pytorch/pytorch/issues/{}", i.number));
    issues.push_back(std::move(i));
    if (static_cast<int>(issues.size()) >= count) break;
  }
  return issues;
}

}  // namespace tcfuzz
