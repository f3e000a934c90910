#include "client/bench/http_get.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace favor::bench {
namespace {

// Owns a socket descriptor.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

absl::Status ErrnoError(absl::string_view what, absl::string_view address) {
  return absl::UnavailableError(
      absl::StrCat(what, " ", address, ": ", std::strerror(errno)));
}

// A socket connected to `address`, with receive and send timeouts set.
absl::StatusOr<int> Connect(absl::string_view address, absl::Duration timeout) {
  std::string host;
  std::string port;
  absl::Status split = SplitHostPort(address, &host, &port);
  if (!split.ok()) return split;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (error != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", address, ": ", gai_strerror(error)));
  }
  const timeval wait = absl::ToTimeval(timeout);
  int fd = -1;
  for (addrinfo* candidate = found; candidate != nullptr;
       candidate = candidate->ai_next) {
    fd = socket(candidate->ai_family, candidate->ai_socktype,
                candidate->ai_protocol);
    if (fd < 0) continue;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait));
    if (connect(fd, candidate->ai_addr, candidate->ai_addrlen) == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0) return ErrnoError("cannot connect to", address);
  return fd;
}

absl::StatusOr<std::string> ReadAll(const Socket& socket,
                                    absl::string_view address,
                                    size_t max_bytes) {
  std::string response;
  char buffer[16384];
  for (;;) {
    const ssize_t received = recv(socket.fd(), buffer, sizeof(buffer), 0);
    if (received == 0) return response;
    if (received < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("reading from", address);
    }
    response.append(buffer, static_cast<size_t>(received));
    if (response.size() > max_bytes) {
      return absl::DataLossError(absl::StrCat(
          "answer from ", address, " is over ", max_bytes, " bytes"));
    }
  }
}

absl::StatusOr<std::string> BodyOf(absl::string_view response,
                                   absl::string_view address) {
  const size_t header_end = response.find("\r\n\r\n");
  if (header_end == absl::string_view::npos) {
    return absl::DataLossError(
        absl::StrCat("answer from ", address, " has no end of headers"));
  }
  // "HTTP/1.x 200 OK"
  const absl::string_view status_line =
      response.substr(0, response.find("\r\n"));
  const std::vector<absl::string_view> words =
      absl::StrSplit(status_line, ' ', absl::SkipEmpty());
  int code = 0;
  if (words.size() < 2 || !absl::StartsWith(words[0], "HTTP/") ||
      !absl::SimpleAtoi(words[1], &code)) {
    return absl::DataLossError(absl::StrCat(
        "answer from ", address, " is not HTTP: '", status_line, "'"));
  }
  if (code != 200) {
    return absl::FailedPreconditionError(
        absl::StrCat(address, " answered '", status_line, "'"));
  }
  return std::string(response.substr(header_end + 4));
}

}  // namespace

absl::Status SplitHostPort(absl::string_view address, std::string* host,
                           std::string* port) {
  const size_t colon = address.rfind(':');
  absl::string_view host_part;
  if (colon != absl::string_view::npos) host_part = address.substr(0, colon);
  const bool bracketed = absl::ConsumePrefix(&host_part, "[") &&
                         absl::ConsumeSuffix(&host_part, "]");
  int port_number = 0;
  if (colon == absl::string_view::npos || host_part.empty() ||
      (!bracketed && absl::StrContains(host_part, ':')) ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port_number) ||
      port_number < 1 || port_number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "address '", address, "' is not HOST:PORT (or [IPv6]:PORT)"));
  }
  *host = std::string(host_part);
  *port = std::string(address.substr(colon + 1));
  return absl::OkStatus();
}

absl::StatusOr<std::string> HttpGet(absl::string_view address,
                                    absl::string_view path,
                                    const HttpGetOptions& options) {
  absl::StatusOr<int> fd = Connect(address, options.timeout);
  if (!fd.ok()) return fd.status();
  const Socket socket(*fd);
  std::string host;
  std::string port;
  (void)SplitHostPort(address, &host, &port);
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host,
                   "\r\nAccept: text/plain\r\nConnection: close\r\n\r\n");
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(socket.fd(), request.data() + sent,
                           request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError("writing to", address);
    sent += static_cast<size_t>(n);
  }
  absl::StatusOr<std::string> response =
      ReadAll(socket, address, options.max_body_bytes);
  if (!response.ok()) return response.status();
  return BodyOf(*response, address);
}

}  // namespace favor::bench
