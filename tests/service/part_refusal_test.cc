// Refusals in the middle of work split into parts (issue 39): a chunked
// input's windows, a call's inputs (one EnqueueGroup), an EmbedStream's
// messages. The batcher's admission hook (Batcher::Options::
// admission_hook_for_testing) refuses the k-th part to reach Enqueue, for
// every k, under each cause a real server meets: a drain begun
// (UNAVAILABLE, the batcher's own message), a deadline passed (the part's
// deadline moved into the past: the batcher's real check refuses it) and a
// full queue (RESOURCE_EXHAUSTED with a retry hint, the batcher's form).
// Each call must be answered exactly once with that code, the parts after
// the refused one never enqueued, the queue and the memory budget back to
// zero, no call left open, and the server serving the next call as before;
// a stream answers every message once, the refused one with the code, and
// (read one message at a time, max_stream_answer_bytes_in_flight = 1)
// keeps reading after it, which it could not if the refused message's
// answer bytes were never given back.
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/batching/batcher.h"
#include "server/batching/memory_budget.h"
#include "server/batching/retry_hint.h"
#include "server/service/favor_service.h"
#include "tests/service/fake_service_fixture.h"
#include "tests/service/test_server.h"

namespace favor::service {
namespace {

using ::favor::service::testing::FakeModel;
using ::favor::service::testing::TestServer;
using ::testing::HasSubstr;

enum class Cause { kNone, kDrain, kDeadline, kFullQueue };

const char* NameOf(Cause cause) {
  switch (cause) {
    case Cause::kNone: return "none";
    case Cause::kDrain: return "drain";
    case Cause::kDeadline: return "deadline";
    case Cause::kFullQueue: return "full queue";
  }
  return "?";
}

grpc::StatusCode CodeOf(Cause cause) {
  switch (cause) {
    case Cause::kNone: return grpc::OK;
    case Cause::kDrain: return grpc::UNAVAILABLE;
    case Cause::kDeadline: return grpc::DEADLINE_EXCEEDED;
    case Cause::kFullQueue: return grpc::RESOURCE_EXHAUSTED;
  }
  return grpc::UNKNOWN;
}

// An answer without its server timing, which differs between calls.
std::string Embeddings(v1::EmbedResponse response) {
  response.clear_timing();
  return response.SerializeAsString();
}

constexpr Cause kCauses[] = {Cause::kDrain, Cause::kDeadline,
                             Cause::kFullQueue};

class PartRefusalTest : public ::testing::Test {
 protected:
  // Windows of 16 tokens: a 64-token input is four.
  PartRefusalTest() : model_("fake", 100, 16) {}

  void SetUp() override {
    batching::MemoryBudget::Options budget;
    budget.max_bytes = int64_t{1} << 34;
    budget_ = *batching::MemoryBudget::Create(std::move(budget));
    FavorService::Options options;
    options.max_inputs_per_call = 8;
    options.max_tokens_per_call = 256;
    // One message read at a time: answer bytes never given back would stop
    // the stream.
    options.max_stream_answer_bytes_in_flight = 1;
    options.embed_batching.memory_budget = budget_.get();
    options.embed_batching.admission_hook_for_testing =
        [this](batching::Request& request) { return Admission(request); };
    server_ = std::make_unique<TestServer>(
        options, std::vector<const model::Model*>{&model_});
  }
  void TearDown() override { model_.Release(); }

  absl::Status Admission(batching::Request& request) {
    const int part = parts_.fetch_add(1);
    if (part != refuse_at_.load()) return absl::OkStatus();
    switch (cause_.load()) {
      case Cause::kNone:
        return absl::OkStatus();
      case Cause::kDrain:
        return absl::UnavailableError("model 'fake' is shutting down");
      case Cause::kDeadline:
        request.deadline = absl::InfinitePast();
        return absl::OkStatus();
      case Cause::kFullQueue:
        return batching::ResourceExhaustedWithRetry(
            "queue of model 'fake' is full: 1 requests queued "
            "(max_queue_requests=1)",
            absl::Milliseconds(5));
    }
    return absl::OkStatus();
  }

  // Refuse part `k` (0-based, in Enqueue order) of what follows with
  // `cause`; kNone (or k < 0) refuses nothing.
  void RefuseAt(int k, Cause cause) {
    parts_ = 0;
    refuse_at_ = cause == Cause::kNone ? -1 : k;
    cause_ = cause;
  }
  int parts() const { return parts_.load(); }

  // Everything the calls reserved is back: nothing queued, no memory held
  // by a batch, no call open.
  void ExpectNothingHeld(const std::string& what) {
    auto lease = server_->service().registry().Find("fake");
    ASSERT_TRUE(lease.ok());
    batching::Batcher* batcher = (*lease)->batcher->batcher().get();
    ASSERT_TRUE(WaitUntil(
        [&] {
          return batcher->NumQueuedRequests() == 0 &&
                 batcher->NumQueuedTokens() == 0 &&
                 budget_->reserved_bytes() == 0 &&
                 server_->service().num_open_calls() == 0;
        },
        absl::Seconds(5)))
        << what << ": queued " << batcher->NumQueuedRequests() << " requests, "
        << batcher->NumQueuedTokens() << " tokens; " << budget_->reserved_bytes()
        << " bytes reserved; " << server_->service().num_open_calls()
        << " calls open";
  }

  // Calls `request` unrefused (its answer, and how many parts it has),
  // then refused at every part under every cause: one answer with the
  // cause's code, no part enqueued after the refused one, nothing held;
  // then the unrefused answer again.
  void ExpectEveryPartRefusedCleanly(const v1::EmbedRequest& request,
                                     int expected_parts) {
    RefuseAt(-1, Cause::kNone);
    v1::EmbedResponse reference;
    const grpc::Status ok = CallEmbed(server_->stub(), request, &reference);
    ASSERT_TRUE(ok.ok()) << ok.error_message();
    ASSERT_EQ(parts(), expected_parts);
    ASSERT_NO_FATAL_FAILURE(ExpectNothingHeld("unrefused"));
    for (Cause cause : kCauses) {
      for (int k = 0; k < expected_parts; ++k) {
        const std::string what =
            absl::StrCat(NameOf(cause), " at part ", k, " of ", expected_parts);
        RefuseAt(k, cause);
        v1::EmbedResponse response;
        // Answered in milliseconds; a call never answered fails in 5 s.
        const grpc::Status status =
            CallEmbed(server_->stub(), request, &response, absl::Seconds(5));
        ASSERT_EQ(status.error_code(), CodeOf(cause))
            << what << ": " << status.error_message();
        if (cause == Cause::kDrain) {
          EXPECT_THAT(status.error_message(), HasSubstr("shutting down"))
              << what;
        }
        if (cause == Cause::kFullQueue) {
          EXPECT_THAT(status.error_message(), HasSubstr("retry after"))
              << what;
        }
        EXPECT_EQ(parts(), k + 1) << what << ": parts enqueued after it";
        ASSERT_NO_FATAL_FAILURE(ExpectNothingHeld(what));
      }
    }
    RefuseAt(-1, Cause::kNone);
    v1::EmbedResponse again;
    ASSERT_TRUE(CallEmbed(server_->stub(), request, &again).ok());
    EXPECT_EQ(Embeddings(again), Embeddings(reference));
    // And a call of another shape.
    ASSERT_TRUE(CallEmbed(server_->stub(), EmbedOf({{5, 6}})).ok());
    ExpectNothingHeld("after");
  }

  FakeModel model_;
  std::unique_ptr<batching::MemoryBudget> budget_;
  std::unique_ptr<TestServer> server_;
  std::atomic<int> parts_{0};
  std::atomic<int> refuse_at_{-1};
  std::atomic<Cause> cause_{Cause::kNone};
};

std::vector<uint32_t> Ramp(int n, uint32_t first) {
  std::vector<uint32_t> ids(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ids[i] = first + static_cast<uint32_t>(i % 50);
  return ids;
}

v1::EmbedRequest Chunked(v1::EmbedRequest request) {
  request.set_truncation(v1::TRUNCATION_CHUNK);
  request.set_chunk_overlap_tokens(0);
  return request;
}

// One input of 64 tokens: four windows of one ChunkGather.
TEST_F(PartRefusalTest, ChunkedInputRefusedAtEveryWindow) {
  ExpectEveryPartRefusedCleanly(Chunked(EmbedOf({Ramp(64, 1)})), 4);
}

// Five inputs of one call (one EnqueueGroup), each a part.
TEST_F(PartRefusalTest, EnqueueGroupRefusedAtEveryInput) {
  ExpectEveryPartRefusedCleanly(
      EmbedOf({Ramp(3, 1), Ramp(5, 7), Ramp(2, 20), Ramp(9, 30), Ramp(1, 40)}),
      5);
}

// Both at once: three inputs chunked into 2, 1 and 3 windows: six parts.
// A refused window of input 1 or 2 cancels input 0's queued windows; the
// call must still be answered with the refusal, not with the CANCELLED of
// the windows it dropped (it was, before the fix, when they reached the
// call first).
TEST_F(PartRefusalTest, GroupOfChunkedInputsRefusedAtEveryPart) {
  ExpectEveryPartRefusedCleanly(
      Chunked(EmbedOf({Ramp(32, 1), Ramp(10, 3), Ramp(40, 9)})), 6);
}

// An EmbedStream of five messages of two chunked inputs each, of one
// window and of two (three parts a message, fifteen in all): refused at
// every part, the message holding it is answered once with the code, every
// other message once with its unrefused answer, and the stream finishes
// OK. A message answered twice (a window or an input released twice) ends
// the stream with an error or never finishes it.
TEST_F(PartRefusalTest, StreamRefusedAtEveryPart) {
  constexpr int kMessages = 5;
  constexpr int kPartsPerMessage = 3;
  std::vector<v1::EmbedRequest> requests;
  for (int m = 0; m < kMessages; ++m) {
    requests.push_back(
        Chunked(EmbedOf({Ramp(2 + m, 1 + m), Ramp(20 + m, 10 + m)})));
  }
  // Each message's unrefused answer.
  std::vector<std::string> references;
  RefuseAt(-1, Cause::kNone);
  for (const v1::EmbedRequest& request : requests) {
    v1::EmbedResponse response;
    ASSERT_TRUE(CallEmbed(server_->stub(), request, &response).ok());
    references.push_back(Embeddings(response));
  }
  ASSERT_EQ(parts(), kMessages * kPartsPerMessage);
  for (Cause cause : kCauses) {
    for (int k = 0; k < kMessages * kPartsPerMessage; ++k) {
      const std::string what = absl::StrCat(NameOf(cause), " at part ", k);
      RefuseAt(k, cause);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(5));
      auto stream = server_->stub().EmbedStream(&context);
      for (int m = 0; m < kMessages; ++m) {
        v1::EmbedStreamRequest message;
        message.set_request_id(absl::StrCat(m));
        *message.mutable_request() = requests[m];
        ASSERT_TRUE(stream->Write(message)) << what;
      }
      stream->WritesDone();
      std::map<int, v1::EmbedStreamResponse> answers;
      v1::EmbedStreamResponse answer;
      while (stream->Read(&answer)) {
        EXPECT_TRUE(answers.emplace(std::stoi(answer.request_id()), answer)
                        .second)
            << what << ": message " << answer.request_id()
            << " answered twice";
      }
      const grpc::Status finish = stream->Finish();
      ASSERT_TRUE(finish.ok()) << what << ": " << finish.error_message();
      ASSERT_EQ(answers.size(), static_cast<size_t>(kMessages)) << what;
      const int refused = k / kPartsPerMessage;
      for (const auto& [m, a] : answers) {
        if (m == refused) {
          EXPECT_EQ(a.error().code(), CodeOf(cause)) << what;
          EXPECT_FALSE(a.has_response()) << what;
        } else {
          ASSERT_TRUE(a.has_response())
              << what << ": message " << m << ": " << a.error().message();
          EXPECT_EQ(Embeddings(a.response()), references[m])
              << what << ": message " << m;
        }
      }
      // The refused message's parts after the refused one are never
      // enqueued.
      EXPECT_EQ(parts(), kMessages * kPartsPerMessage -
                             (kPartsPerMessage - 1 - k % kPartsPerMessage))
          << what;
      ASSERT_NO_FATAL_FAILURE(ExpectNothingHeld(what));
    }
  }
}

}  // namespace
}  // namespace favor::service
