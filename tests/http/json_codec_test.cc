// CheckRequestBody (json_codec.h): strict JSON only, and limits that no call
// within the service's limits passes. The largest calls are written by
// protobuf's own JSON printer, every field set, so the limits are checked
// against what a client may really send.
#include "server/http/json_codec.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "favor/v1/favor.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "server/http/openai.pb.h"

namespace favor::http {
namespace {

namespace pb = google::protobuf;
using ::testing::HasSubstr;

JsonBodyLimits Unlimited() {
  JsonBodyLimits limits;
  limits.max_values = limits.max_strings = limits.max_containers =
      limits.max_nested_in_array = INT64_MAX;
  return limits;
}

absl::Status Check(absl::string_view json,
                   const JsonBodyLimits& limits = Unlimited()) {
  return CheckRequestBody(json, limits);
}

TEST(CheckRequestBodyTest, RefusesWhatProtobufsLenientParserTakes) {
  // Each is JSON that RFC 8259 forbids and protobuf's parser takes; the last
  // hides 40 KB of nesting from a depth count that takes '"' as opening a
  // string, and would take 14 s to parse on an event-loop thread.
  for (const std::string& body : std::vector<std::string>{
           "{'input': 'hello'}", "{input: \"hello\"}", "{\"input\": \"a\",}",
           "{\"input\": [1,]}", "{\"input\": \"a\x01\"}",
           "{\"input\": \"a\nb\"}", std::string("{\"input\": \"a\0b\"}", 16),
           "{\"dimensions\": 01}", "{\"dimensions\": +1}",
           "{\"dimensions\": 0x1}", "{\"dimensions\": NaN}",
           "{\"dimensions\": Infinity}", "{\"input\": \"\\ud800\"}",
           "{\"input\": \"\\x41\"}", "{\"a\": 1} x", "{\"a\": 1}{}", "",
           // Beyond a double's range (RFC 8259 lets a parser set one).
           "{\"dimensions\": 1e400}",
           absl::StrCat("{\"user\":'\"',\"input\":", std::string(20000, '['),
                        "1", std::string(20000, ']'), "}")}) {
    const absl::Status status = Check(body);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(status.message(),
                HasSubstr("the request body is not valid JSON: "))
        << body;
  }
  EXPECT_THAT(Check("{\"input\": \"\xC3\"}").message(),
              HasSubstr("not valid UTF-8"));
}

TEST(CheckRequestBodyTest, TakesEveryFormOfValidJson) {
  for (const std::string& body : std::vector<std::string>{
           "{}", " \t\r\n{ \"a\" : [ ] , \"b\" : { } } \n",
           "{\"input\": \"\\u0000\\\"\\\\\\/\\b\\f\\n\\r\\t\\ud83d\\ude00\"}",
           "{\"input\": \"caf\xC3\xA9 \xF0\x9F\x98\x80\"}",
           "{\"a\": [-0, 1.5e-3, 1E+2, 18446744073709551616, true, "
           "false, null]}",
           "[1]", "\"text\""}) {
    EXPECT_TRUE(Check(body).ok()) << body << ": " << Check(body).message();
  }
}

TEST(CheckRequestBodyTest, NestingIsBoundedAt32) {
  const auto nested = [](int depth) {
    return absl::StrCat("{\"a\":", std::string(depth, '['),
                        std::string(depth, ']'), "}");
  };
  EXPECT_TRUE(Check(nested(31)).ok());
  EXPECT_THAT(Check(nested(32)).message(),
              HasSubstr("the request body nests arrays and objects more "
                        "than 32 deep"));
}

TEST(CheckRequestBodyTest, KeysAreUniqueAndFew) {
  EXPECT_THAT(Check("{\"input\": 1, \"input\": 2}").message(),
              HasSubstr("the request body has the key \"input\" twice"));
  EXPECT_THAT(Check("{\"a\": {\"b\": 1, \"c\": 2, \"b\": 3}}").message(),
              HasSubstr("has the key \"b\" twice"));
  EXPECT_TRUE(
      Check("{\"a\": [{\"b\": 1}, {\"b\": 2}], \"b\": {\"b\": 3}}").ok());
  std::string members = "{";
  for (int i = 0; i < 64; ++i) absl::StrAppend(&members, "\"k", i, "\":0,");
  members.pop_back();
  EXPECT_TRUE(Check(absl::StrCat(members, "}")).ok());
  EXPECT_THAT(Check(absl::StrCat(members, ",\"k64\":0}")).message(),
              HasSubstr("has an object of more than 64 members"));
}

TEST(CheckRequestBodyTest, EachCountStopsAtItsLimit) {
  // 1 object, 3 arrays (one in an array), 3 strings, 8 values in all.
  constexpr char kBody[] = R"({"a": ["x", "y"], "b": [["z"]], "c": null})";
  struct Limit {
    int64_t JsonBodyLimits::*field;
    int64_t value;
    const char* message;
  } limits[] = {
      {&JsonBodyLimits::max_values, 8, "has more than 7 values"},
      {&JsonBodyLimits::max_strings, 3, "has more than 2 strings"},
      {&JsonBodyLimits::max_containers, 4,
       "has more than 3 objects and arrays"},
      {&JsonBodyLimits::max_nested_in_array, 1,
       "has an array of more than 0 objects or arrays"},
  };
  for (const Limit& limit : limits) {
    JsonBodyLimits within = Unlimited();
    within.*limit.field = limit.value;
    within.why = " (why)";
    EXPECT_TRUE(Check(kBody, within).ok()) << limit.message;
    within.*limit.field = limit.value - 1;
    EXPECT_EQ(Check(kBody, within).message(),
              absl::StrCat("the request body ", limit.message, " (why)"));
  }
}

// Every field of `message` set (an enum's last value, 1 for a
// number, "x" for a string), `per_repeated(field)` elements in each
// repeated field.
void Fill(pb::Message* message,
          const std::function<int(const pb::FieldDescriptor&)>& per_repeated) {
  const pb::Descriptor* type = message->GetDescriptor();
  const pb::Reflection* reflection = message->GetReflection();
  for (int i = 0; i < type->field_count(); ++i) {
    const pb::FieldDescriptor* field = type->field(i);
    const int count = field->is_repeated() ? per_repeated(*field) : 1;
    for (int n = 0; n < count; ++n) {
      const bool add = field->is_repeated();
      switch (field->cpp_type()) {
        case pb::FieldDescriptor::CPPTYPE_MESSAGE:
          Fill(add ? reflection->AddMessage(message, field)
                   : reflection->MutableMessage(message, field),
               per_repeated);
          break;
        case pb::FieldDescriptor::CPPTYPE_STRING:
          add ? reflection->AddString(message, field, "x")
              : reflection->SetString(message, field, "x");
          break;
        case pb::FieldDescriptor::CPPTYPE_ENUM: {
          const auto* value =
              field->enum_type()->value(field->enum_type()->value_count() - 1);
          add ? reflection->AddEnum(message, field, value)
              : reflection->SetEnum(message, field, value);
          break;
        }
        case pb::FieldDescriptor::CPPTYPE_BOOL:
          add ? reflection->AddBool(message, field, true)
              : reflection->SetBool(message, field, true);
          break;
        case pb::FieldDescriptor::CPPTYPE_UINT32:
          add ? reflection->AddUInt32(message, field, 1)
              : reflection->SetUInt32(message, field, 1);
          break;
        case pb::FieldDescriptor::CPPTYPE_INT32:
          add ? reflection->AddInt32(message, field, 1)
              : reflection->SetInt32(message, field, 1);
          break;
        case pb::FieldDescriptor::CPPTYPE_INT64:
          add ? reflection->AddInt64(message, field, 1)
              : reflection->SetInt64(message, field, 1);
          break;
        case pb::FieldDescriptor::CPPTYPE_UINT64:
          add ? reflection->AddUInt64(message, field, 1)
              : reflection->SetUInt64(message, field, 1);
          break;
        case pb::FieldDescriptor::CPPTYPE_FLOAT:
          add ? reflection->AddFloat(message, field, 1)
              : reflection->SetFloat(message, field, 1);
          break;
        case pb::FieldDescriptor::CPPTYPE_DOUBLE:
          add ? reflection->AddDouble(message, field, 1)
              : reflection->SetDouble(message, field, 1);
          break;
      }
    }
  }
}

std::string ToJson(const pb::Message& message) {
  pb::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.always_print_enums_as_ints = false;
  std::string json;
  EXPECT_TRUE(pb::util::MessageToJsonString(message, &json, options).ok());
  return json;
}

constexpr CallLimits kLimits = {/*max_inputs_per_call=*/5,
                                /*max_tokens_per_call=*/300,
                                /*max_spans_per_input=*/7};

// The largest request of each unary method of favor.v1.Favor passes
// FavorBodyLimits; an array of more messages than any may hold does not.
TEST(FavorBodyLimitsTest, TheLargestCallOfEachMethodPasses) {
  const pb::ServiceDescriptor* service =
      v1::EmbedRequest::descriptor()->file()->FindServiceByName("Favor");
  const JsonBodyLimits limits = FavorBodyLimits(kLimits);
  for (int i = 0; i < service->method_count(); ++i) {
    const pb::MethodDescriptor* method = service->method(i);
    if (method->client_streaming()) continue;
    pb::DynamicMessageFactory factory;
    std::unique_ptr<pb::Message> request(
        factory.GetPrototype(method->input_type())->New());
    Fill(request.get(), [&](const pb::FieldDescriptor& field) -> int {
      if (field.name() == "inputs" || field.name() == "texts") {
        return kLimits.max_inputs_per_call;
      }
      if (field.name() == "spans") return kLimits.max_spans_per_input;
      if (field.name() == "token_ids") {
        return kLimits.max_tokens_per_call / kLimits.max_inputs_per_call;
      }
      if (field.name() == "key_padding_mask") {
        return kLimits.max_tokens_per_call;
      }
      return 3;  // a tensor's shape
    });
    const std::string json = ToJson(*request);
    EXPECT_TRUE(CheckRequestBody(json, limits).ok())
        << method->name() << ": " << CheckRequestBody(json, limits) << "\n"
        << json.substr(0, 2000);
  }
  // An array of requests' messages beyond the most any call may send: the
  // limits are bounds, the service applies its own exact ones.
  v1::EmbedRequest one_more;
  for (int i = 0; i <= kLimits.max_spans_per_input; ++i) {
    one_more.add_inputs()->add_token_ids(1);
  }
  EXPECT_THAT(CheckRequestBody(ToJson(one_more), limits).message(),
              HasSubstr("has an array of more than 7 objects or arrays, more "
                        "than a call of at most 5 inputs and 300 tokens (the "
                        "server's limits) needs"));
}

// The service's flags have no upper bound: limits saturate, never wrap.
TEST(FavorBodyLimitsTest, HugeCallLimitsSaturate) {
  const CallLimits huge = {INT64_MAX / 2, INT64_MAX / 2, INT64_MAX / 2};
  for (const JsonBodyLimits& limits :
       {FavorBodyLimits(huge), EmbeddingsBodyLimits(huge)}) {
    EXPECT_EQ(limits.max_values, INT64_MAX);
    EXPECT_GE(limits.max_containers, INT64_MAX / 2);
    EXPECT_GT(limits.max_strings, INT64_MAX / 4);
    EXPECT_TRUE(
        CheckRequestBody(R"({"inputs": [{"token_ids": [1]}]})", limits).ok());
  }
}

TEST(EmbeddingsBodyLimitsTest, TheLargestCallPassesAndOneInputMoreDoesNot) {
  const JsonBodyLimits limits = EmbeddingsBodyLimits(kLimits);
  const auto request = [](int inputs, int tokens, bool text) {
    openai::EmbeddingsRequest body;
    body.set_model("x");
    body.set_encoding_format("base64");
    body.set_dimensions(8);
    body.set_user("x");
    body.set_prompt_name("x");
    body.set_truncation_direction("left");
    for (const char* type : {"float", "int8", "uint8", "binary", "ubinary"}) {
      body.add_embedding_types(type);
    }
    pb::ListValue* list = body.mutable_input()->mutable_list_value();
    for (int i = 0; i < inputs; ++i) {
      if (text) {
        list->add_values()->set_string_value("x");
        continue;
      }
      pb::ListValue* ids = list->add_values()->mutable_list_value();
      for (int t = 0; t < tokens / inputs; ++t) {
        ids->add_values()->set_number_value(1);
      }
    }
    return ToJson(body);
  };
  for (const bool text : {false, true}) {
    EXPECT_TRUE(CheckRequestBody(request(5, 300, text), limits).ok()) << text;
    EXPECT_FALSE(CheckRequestBody(request(6, 300, text), limits).ok()) << text;
  }
  // One list of every token.
  EXPECT_TRUE(CheckRequestBody(request(1, 300, false), limits).ok());
  EXPECT_THAT(CheckRequestBody(request(1, 400, false), limits).message(),
              HasSubstr("has more than "));
}

}  // namespace
}  // namespace favor::http
