// favor-server's OpenAPI 3.1 document (GET /openapi.json), made at build
// time by server/http/openapi/make_openapi.py from the hand-written
// openapi.yaml beside it and from proto/favor/v1/favor.proto, and embedded
// here (openapi_document.cc is generated), so that the server needs no file
// and no network to serve it.
#ifndef FAVOR_SERVER_HTTP_OPENAPI_DOCUMENT_H_
#define FAVOR_SERVER_HTTP_OPENAPI_DOCUMENT_H_

#include "absl/strings/string_view.h"

namespace favor::http {

// The document, JSON in UTF-8.
absl::string_view OpenApiDocument();

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_OPENAPI_DOCUMENT_H_
