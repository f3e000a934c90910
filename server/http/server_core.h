// What HttpServer's connections share (internal to http_server.cc and
// session.h): the options, the handler, the event loop, the TLS context, the
// connection count and the requests being handled.
#ifndef FAVOR_SERVER_HTTP_SERVER_CORE_H_
#define FAVOR_SERVER_HTTP_SERVER_CORE_H_

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl/context.hpp"
#include "server/http/http_server.h"

namespace favor::http {

// Counts the requests a handler holds, so that Shutdown can wait for their
// answers; once closed, late answers are dropped instead of touching an
// event loop that is going away.
class RequestsInFlight {
 public:
  void Begin() {
    absl::MutexLock lock(&mu_);
    ++count_;
  }
  // Runs `post` (which queues the answer on the event loop) unless closed,
  // then counts the request as answered, both under the lock so that
  // Close() cannot slip between them.
  void End(absl::FunctionRef<void()> post) {
    absl::MutexLock lock(&mu_);
    if (open_) post();
    --count_;
  }
  // Waits up to `timeout` for every request to be answered, then closes;
  // false when some are still out.
  bool DrainAndClose(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto idle = [this]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ == 0; };
    mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
    open_ = false;
    return count_ == 0;
  }

 private:
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

struct HttpServer::Core {
  Core(const Options& server_options, Handler* server_handler)
      : options(server_options),
        handler(server_handler),
        io(server_options.num_threads),
        acceptor(io) {}

  const Options options;
  Handler* const handler;
  boost::asio::io_context io;
  std::optional<boost::asio::ssl::context> tls;  // empty: plaintext
  boost::asio::ip::tcp::acceptor acceptor;
  int port = 0;
  std::vector<std::thread> threads;
  std::atomic<int> connections{0};
  RequestsInFlight in_flight;
  std::atomic<bool> stopped{false};
};

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_SERVER_CORE_H_
