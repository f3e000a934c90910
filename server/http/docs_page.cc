#include "server/http/docs_page.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/http/api_errors.h"

namespace favor::http {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kIndex = "index.html";

// The folder's regular files within the options' sizes, by name.
std::map<std::string, std::string, std::less<>> ReadFiles(
    const fs::path& dir, const DocsPage::Options& options) {
  std::map<std::string, std::string, std::less<>> files;
  int64_t total = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    std::error_code entry_error;
    // Dot files are the installer's (.installed), not the page's.
    if (!entry.is_regular_file(entry_error) ||
        entry.path().filename().string().front() == '.') {
      continue;
    }
    const auto size = static_cast<int64_t>(entry.file_size(entry_error));
    if (entry_error || size > options.max_file_bytes ||
        total + size > options.max_total_bytes) {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    if (!in.bad()) {
      total += static_cast<int64_t>(bytes.size());
      files.emplace(entry.path().filename().string(), std::move(bytes));
    }
  }
  return files;
}

}  // namespace

DocsPage::DocsPage(const Options& options) {
  for (const std::string& dir : options.dirs) {
    std::error_code error;
    if (!fs::is_regular_file(fs::path(dir) / std::string(kIndex), error)) {
      continue;
    }
    files_ = ReadFiles(dir, options);
    if (files_.count(kIndex) == 0) continue;
    dir_ = dir;
    return;
  }
  status_ = absl::FailedPreconditionError(absl::StrCat(
      "the /docs page's files were not found (", kIndex, " in ",
      options.dirs.empty() ? std::string("no folder given")
                           : absl::StrJoin(options.dirs, " or "),
      "): favor-server's build installs them from npm's swagger-ui-dist "
      "(target favor_docs_page) and could not, or --docs_dir names another "
      "folder; GET /openapi.json still serves the API's description"));
}

Response DocsPage::Serve(absl::string_view path) const {
  if (!status_.ok()) {
    return ErrorResponse(Status::service_unavailable, status_.message());
  }
  if (path == "/") {
    // Relative, so that it holds behind a proxy that adds a prefix.
    Response redirect = MakeResponse(Status::permanent_redirect,
                                     "text/plain; charset=utf-8", "");
    redirect.set(boost::beast::http::field::location, "../docs");
    return redirect;
  }
  absl::string_view file = path.empty() ? kIndex : path.substr(1);
  const auto found = files_.find(file);
  if (found == files_.end()) {
    return ErrorResponse(Status::not_found,
                         absl::StrCat("the /docs page has no file '",
                                      file, "'"));
  }
  Response response = MakeResponse(Status::ok, ContentTypeOf(file),
                                   found->second);
  // The files change only with favor-server's build.
  response.set(boost::beast::http::field::cache_control, "no-cache");
  return response;
}

absl::string_view DocsPage::ContentTypeOf(absl::string_view file) {
  if (absl::EndsWith(file, ".html")) return "text/html; charset=utf-8";
  if (absl::EndsWith(file, ".js")) return "text/javascript; charset=utf-8";
  if (absl::EndsWith(file, ".css")) return "text/css; charset=utf-8";
  if (absl::EndsWith(file, ".png")) return "image/png";
  if (absl::EndsWith(file, ".json") || absl::EndsWith(file, ".map")) {
    return "application/json";
  }
  return "text/plain; charset=utf-8";
}

}  // namespace favor::http
