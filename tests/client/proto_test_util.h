// Protos in tests: messages written in text format, and equality with the
// differences spelled out.
#ifndef FAVOR_TESTS_CLIENT_PROTO_TEST_UTIL_H_
#define FAVOR_TESTS_CLIENT_PROTO_TEST_UTIL_H_

#include <string>

#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace favor::testing {

// `text` in protobuf text format as a Message; a test failure when it does
// not parse.
template <typename Message>
Message ParseText(const std::string& text) {
  Message message;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &message))
      << text;
  return message;
}

// A test failure listing the differences when `got` is not `want`.
template <typename Message>
void ExpectProtoEq(const Message& got, const Message& want) {
  std::string difference;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&difference);
  EXPECT_TRUE(differencer.Compare(want, got)) << difference;
}

}  // namespace favor::testing

#endif  // FAVOR_TESTS_CLIENT_PROTO_TEST_UTIL_H_
