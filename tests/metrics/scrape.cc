#include "tests/metrics/scrape.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace favor::metrics::scrape {
namespace {

absl::Status ErrnoError(absl::string_view what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// Closes the socket however the request ends.
class Socket {
 public:
  Socket() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {}
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

absl::Status Connect(const Socket& socket, int port) {
  if (socket.fd() < 0) return ErrnoError("socket");
  timeval timeout{};
  timeout.tv_sec = 10;
  setsockopt(socket.fd(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(socket.fd(), reinterpret_cast<const sockaddr*>(&address),
              sizeof(address)) != 0) {
    return ErrnoError(absl::StrCat("connect to 127.0.0.1:", port));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Exchange(const Socket& socket,
                                     const std::string& request) {
  if (send(socket.fd(), request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return ErrnoError("send");
  }
  std::string response;
  char buffer[4096];
  for (;;) {
    const ssize_t received = recv(socket.fd(), buffer, sizeof(buffer), 0);
    if (received == 0) return response;
    if (received < 0) return ErrnoError("recv");
    response.append(buffer, static_cast<size_t>(received));
  }
}

absl::StatusOr<HttpResponse> ParseResponse(absl::string_view raw) {
  const size_t header_end = raw.find("\r\n\r\n");
  if (header_end == absl::string_view::npos) {
    return absl::DataLossError(absl::StrCat("no end of headers in: ", raw));
  }
  HttpResponse response;
  response.headers = std::string(raw.substr(0, header_end));
  response.body = std::string(raw.substr(header_end + 4));
  // "HTTP/1.1 200 OK"
  const std::vector<absl::string_view> status_line =
      absl::StrSplit(raw.substr(0, raw.find("\r\n")), ' ');
  if (status_line.size() < 2 ||
      !absl::SimpleAtoi(status_line[1], &response.status_code)) {
    return absl::DataLossError(absl::StrCat("bad status line in: ", raw));
  }
  return response;
}

// Splits `name{a="x",b="y"} 1.5` into its parts; false for other lines.
bool ParseSample(absl::string_view line, absl::string_view& name,
                 LabelSet& labels, double& value) {
  if (line.empty() || line[0] == '#') return false;
  const size_t space = line.rfind(' ');
  if (space == absl::string_view::npos) return false;
  absl::string_view series = line.substr(0, space);
  if (!absl::SimpleAtod(line.substr(space + 1), &value)) return false;
  labels.clear();
  const size_t brace = series.find('{');
  name = series.substr(0, brace);
  if (brace == absl::string_view::npos) return true;
  absl::string_view pairs = series.substr(brace + 1);
  if (!absl::ConsumeSuffix(&pairs, "}")) return false;
  // Label values in these tests hold no commas or escaped quotes.
  for (absl::string_view pair : absl::StrSplit(pairs, ',', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(pair, absl::MaxSplits('=', 1));
    absl::string_view quoted = kv.second;
    if (!absl::ConsumePrefix(&quoted, "\"") ||
        !absl::ConsumeSuffix(&quoted, "\"")) {
      return false;
    }
    labels[std::string(kv.first)] = std::string(quoted);
  }
  return true;
}

}  // namespace

absl::StatusOr<HttpResponse> HttpGet(int port, absl::string_view path) {
  Socket socket;
  absl::Status connected = Connect(socket, port);
  if (!connected.ok()) return connected;
  absl::StatusOr<std::string> raw =
      Exchange(socket, absl::StrCat("GET ", path,
                                    " HTTP/1.0\r\nHost: 127.0.0.1\r\n"
                                    "Connection: close\r\n\r\n"));
  if (!raw.ok()) return raw.status();
  return ParseResponse(*raw);
}

std::optional<double> FindSample(absl::string_view exposition,
                                 absl::string_view name,
                                 const LabelSet& labels) {
  absl::string_view sample_name;
  LabelSet sample_labels;
  double value = 0;
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (ParseSample(line, sample_name, sample_labels, value) &&
        sample_name == name && sample_labels == labels) {
      return value;
    }
  }
  return std::nullopt;
}

int CountSamples(absl::string_view exposition, absl::string_view name) {
  absl::string_view sample_name;
  LabelSet labels;
  double value = 0;
  int count = 0;
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (ParseSample(line, sample_name, labels, value) && sample_name == name) {
      ++count;
    }
  }
  return count;
}

}  // namespace favor::metrics::scrape
