#include "server/service/metrics_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace favor::service {
namespace {

absl::StatusOr<int> Listen(const std::string& address, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (port < 0 || port > 65535 ||
      inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics: cannot listen on '", address, ":", port,
                     "': needs an IPv4 address and a port in [0, 65535]"));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) ||
      listen(fd, 16) != 0) {
    const std::string error = std::strerror(errno);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat(
        "metrics: cannot listen on ", address, ":", port, ": ", error));
  }
  return fd;
}

int PortOf(int fd) {
  sockaddr_in addr{};
  socklen_t length = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  return ntohs(addr.sin_port);
}

void WriteAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Create(
    const Options& options, const metrics::Metrics* metrics) {
  absl::StatusOr<int> fd = Listen(options.bind_address, options.port);
  if (!fd.ok()) return fd.status();
  return std::unique_ptr<MetricsHttpServer>(
      new MetricsHttpServer(options, metrics, *fd, PortOf(*fd)));
}

MetricsHttpServer::MetricsHttpServer(const Options& options,
                                     const metrics::Metrics* metrics, int fd,
                                     int port)
    : options_(options), metrics_(metrics), fd_(fd), port_(port) {
  thread_ = std::thread([this] { Loop(); });
}

MetricsHttpServer::~MetricsHttpServer() {
  stop_.store(true);
  thread_.join();
  close(fd_);
}

void MetricsHttpServer::Loop() {
  while (!stop_.load()) {
    pollfd poll_fd{fd_, POLLIN, 0};
    if (poll(&poll_fd, 1, /*timeout=*/100) <= 0) continue;
    const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    timeval timeout{options_.read_timeout_millis / 1000,
                    (options_.read_timeout_millis % 1000) * 1000};
    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    Answer(client);
    close(client);
  }
}

void MetricsHttpServer::Answer(int client) const {
  std::string request;
  char buffer[4096];
  while (!absl::StrContains(request, "\r\n\r\n") && request.size() < 65536) {
    const ssize_t n = recv(client, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    request.append(buffer, static_cast<size_t>(n));
  }
  const bool metrics = absl::StartsWith(request, "GET /metrics ") ||
                       absl::StartsWith(request, "GET /metrics?");
  const std::string body = metrics ? metrics_->SerializeText() : "not found\n";
  WriteAll(client,
           absl::StrCat("HTTP/1.0 ", metrics ? "200 OK" : "404 Not Found",
                        "\r\nContent-Type: text/plain; version=0.0.4; "
                        "charset=utf-8\r\nContent-Length: ",
                        body.size(), "\r\nConnection: close\r\n\r\n", body));
}

}  // namespace favor::service
