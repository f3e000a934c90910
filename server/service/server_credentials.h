// The gRPC server credentials: TLS from PEM files, or plaintext.
#ifndef FAVOR_SERVER_SERVICE_SERVER_CREDENTIALS_H_
#define FAVOR_SERVER_SERVICE_SERVER_CREDENTIALS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace favor::service {

struct TlsOptions {
  // PEM certificate chain and private key of the server. Both empty:
  // plaintext (InsecureServerCredentials); exactly one set is an error.
  std::string cert_file;
  std::string key_file;
  // PEM CA certificates that sign client certificates. Set: every client
  // must present a certificate that verifies against them (mutual TLS).
  std::string client_ca_file;
};

// Credentials for ServerBuilder::AddListeningPort. NOT_FOUND names a file
// that cannot be read; INVALID_ARGUMENT a bad combination of options.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& options);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_SERVER_CREDENTIALS_H_
