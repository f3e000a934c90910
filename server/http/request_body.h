// The body type of every request the server reads: a std::string that grows
// as bytes arrive. Beast's own string_body reserves the whole Content-Length
// as soon as the header is read, so a client that merely claims 32 MiB would
// make the server allocate 32 MiB per connection; this one allocates only
// for bytes received (the parser's body_limit still refuses a claim over the
// limit before any byte of the body is read).
#ifndef FAVOR_SERVER_HTTP_REQUEST_BODY_H_
#define FAVOR_SERVER_HTTP_REQUEST_BODY_H_

#include <cstdint>
#include <string>

#include "boost/asio/buffer.hpp"
#include "boost/beast/core/error.hpp"
#include "boost/beast/http/message.hpp"
#include "boost/optional.hpp"

namespace favor::http {

struct GrowingStringBody {
  using value_type = std::string;

  static std::uint64_t size(const value_type& body) { return body.size(); }

  class reader {
   public:
    template <bool kIsRequest, class Fields>
    reader(boost::beast::http::header<kIsRequest, Fields>&, value_type& body)
        : body_(body) {}

    // Deliberately ignores the claimed length: no reserve.
    void init(const boost::optional<std::uint64_t>&,
              boost::beast::error_code& error) {
      error = {};
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers,
                    boost::beast::error_code& error) {
      const std::size_t size = boost::asio::buffer_size(buffers);
      const std::size_t old_size = body_.size();
      body_.resize(old_size + size);  // std::string grows geometrically
      error = {};
      return boost::asio::buffer_copy(
          boost::asio::buffer(&body_[old_size], size), buffers);
    }

    void finish(boost::beast::error_code& error) { error = {}; }

   private:
    value_type& body_;
  };
};

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_REQUEST_BODY_H_
