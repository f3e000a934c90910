// GET /docs: an interactive page of the HTTP API (Swagger UI, from npm's
// swagger-ui-dist, installed beside favor-server at build time by
// server/http/openapi/install_docs_page.sh; no CDN, no network at run
// time), which reads GET /openapi.json and can send its examples.
//
// The page is a folder of files: index.html (server/http/openapi's own,
// served as /docs) and Swagger UI's script, style sheet and icons (served as
// /docs/<file>). Every regular file directly in the folder (but dot files)
// is read once,
// when the page is loaded, so that answering never touches the disk and no
// request can name a file outside the folder (a name is looked up among
// those read, never opened). Without the folder (npm was unreachable when
// favor-server was built, or --docs_dir names none) /docs and /docs/<file>
// are 503, saying where the files were looked for.
#ifndef FAVOR_SERVER_HTTP_DOCS_PAGE_H_
#define FAVOR_SERVER_HTTP_DOCS_PAGE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/http/http_server.h"

namespace favor::http {

class DocsPage {
 public:
  struct Options {
    // Folders to take the page from: the first that holds index.html.
    std::vector<std::string> dirs;
    // A larger file is left out (Swagger UI's largest is 1.5 MB), and so
    // are the files after the total reaches max_total_bytes.
    int64_t max_file_bytes = int64_t{16} << 20;
    int64_t max_total_bytes = int64_t{64} << 20;
  };

  // Reads the page's files; never fails (a missing page is status()).
  explicit DocsPage(const Options& options);

  // OK, or FAILED_PRECONDITION saying which folders were tried.
  const absl::Status& status() const { return status_; }
  // The folder the page came from; empty without one.
  const std::string& dir() const { return dir_; }

  // GET /docs<path>: the page for "" (index.html), a file for "/<file>"
  // (200 with its Content-Type, 404 for a name that is not in the folder),
  // and for "/" a redirect to /docs (the page's links are relative to
  // /docs); 503 without a page.
  Response Serve(absl::string_view path) const;

  // The Content-Type of a file, by its extension.
  static absl::string_view ContentTypeOf(absl::string_view file);

 private:
  absl::Status status_;
  std::string dir_;
  std::map<std::string, std::string, std::less<>> files_;  // name → bytes
};

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_DOCS_PAGE_H_
