// MemoryBudget on its own: what it refuses to be, reservations within the
// room left, releases and their listeners, the gauge callback.
#include "server/batching/memory_budget.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::batching {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<MemoryBudget> MakeBudget(int64_t max_bytes,
                                         int64_t resident_bytes,
                                         std::vector<int64_t>* changes) {
  MemoryBudget::Options options;
  options.max_bytes = max_bytes;
  options.resident_bytes = resident_bytes;
  if (changes != nullptr) {
    options.on_change = [changes](int64_t reserved) {
      changes->push_back(reserved);
    };
  }
  auto budget = MemoryBudget::Create(std::move(options));
  EXPECT_TRUE(budget.ok()) << budget.status();
  return budget.ok() ? *std::move(budget) : nullptr;
}

TEST(MemoryBudgetTest, RefusesABudgetThatLeavesNothingForBatches) {
  for (const auto& [max_bytes, resident] :
       std::vector<std::pair<int64_t, int64_t>>{
           {0, 0}, {-1, 0}, {100, 100}, {100, 200}, {100, -1}}) {
    MemoryBudget::Options options;
    options.max_bytes = max_bytes;
    options.resident_bytes = resident;
    const auto budget = MemoryBudget::Create(std::move(options));
    ASSERT_FALSE(budget.ok()) << max_bytes << " " << resident;
    EXPECT_EQ(budget.status().code(), absl::StatusCode::kInvalidArgument);
  }
  MemoryBudget::Options options;
  options.max_bytes = 100;
  options.resident_bytes = 100;
  EXPECT_THAT(MemoryBudget::Create(std::move(options)).status().message(),
              HasSubstr("memory budget of 100 bytes leaves nothing"));
}

TEST(MemoryBudgetTest, ReservesWhatIsChosenWithinTheRoomLeft) {
  std::vector<int64_t> changes;
  auto budget = MakeBudget(1000, 300, &changes);
  EXPECT_EQ(budget->batch_capacity_bytes(), 700);
  std::vector<int64_t> offered;
  auto take = [&](int64_t bytes) {
    return budget->Reserve([&](int64_t available) {
      offered.push_back(available);
      return available >= bytes ? bytes : 0;
    });
  };
  EXPECT_EQ(take(400), 400);
  EXPECT_EQ(take(400), 0);  // 300 left: nothing reserved
  EXPECT_EQ(take(300), 300);
  EXPECT_THAT(offered, ElementsAre(700, 300, 300));
  EXPECT_EQ(budget->reserved_bytes(), 700);
  budget->Release(400);
  EXPECT_EQ(budget->reserved_bytes(), 300);
  budget->Release(0);  // nothing to tell anyone
  EXPECT_THAT(changes, ElementsAre(400, 700, 300));
}

// A reload's new weights: they fit exactly in what is free (neither
// resident nor reserved), one byte more is refused and counts nothing.
TEST(MemoryBudgetTest, AddsWeightsThatFitExactlyInWhatIsFree) {
  auto budget = MakeBudget(1000, 300, nullptr);
  EXPECT_EQ(budget->Reserve([](int64_t) { return 200; }), 200);
  const absl::Status refused = budget->AddWeights(501);  // 500 free
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(),
              HasSubstr("300 resident, 200 reserved by batches, 500 free"));
  EXPECT_EQ(budget->resident_bytes(), 300);
  EXPECT_TRUE(budget->AddWeights(500).ok());
  EXPECT_EQ(budget->resident_bytes(), 800);
  budget->RemoveWeights(500);
  EXPECT_EQ(budget->resident_bytes(), 300);
}

// The resident gauge follows reloads (it kept its start-up value).
TEST(MemoryBudgetTest, TellsTheResidentBytesAfterWeightsComeAndGo) {
  std::vector<int64_t> resident;
  MemoryBudget::Options options;
  options.max_bytes = 1000;
  options.resident_bytes = 300;
  options.on_resident_change = [&resident](int64_t bytes) {
    resident.push_back(bytes);
  };
  auto budget = MemoryBudget::Create(std::move(options));
  ASSERT_TRUE(budget.ok()) << budget.status();
  EXPECT_TRUE((*budget)->AddWeights(200).ok());
  EXPECT_FALSE((*budget)->AddWeights(600).ok());  // refused: no change
  (*budget)->RemoveWeights(150);
  EXPECT_THAT(resident, ::testing::ElementsAre(500, 350));
}

// A reload: the replaced revision's weights retire (still resident) beside
// the new ones, and come back when it is freed; a failed replacement takes
// the retirement back. Every change of the room for batches is told.
TEST(MemoryBudgetTest, RetiredWeightsStayResidentUntilFreed) {
  auto budget = MakeBudget(1000, 300, nullptr);
  int told = 0;
  budget->AddListener([&told] { ++told; });
  budget->RetireWeights(300);
  EXPECT_EQ(budget->retiring_bytes(), 300);
  EXPECT_EQ(budget->resident_bytes(), 300);
  ASSERT_TRUE(budget->AddWeights(250).ok());
  EXPECT_EQ(told, 1);  // less room: a waiting request may no longer fit
  EXPECT_EQ(budget->batch_capacity_bytes(), 450);
  budget->FreeRetiredWeights(300);
  EXPECT_EQ(told, 2);
  EXPECT_EQ(budget->retiring_bytes(), 0);
  EXPECT_EQ(budget->batch_capacity_bytes(), 750);

  budget->RetireWeights(250);
  budget->UnretireWeights(250);  // its replacement failed: it serves on
  EXPECT_EQ(budget->retiring_bytes(), 0);
  EXPECT_EQ(budget->resident_bytes(), 250);
}

TEST(MemoryBudgetTest, TellsEveryListenerOfEveryRelease) {
  auto budget = MakeBudget(1000, 0, nullptr);
  int first = 0, second = 0;
  const int first_id = budget->AddListener([&] { ++first; });
  budget->AddListener([&] { ++second; });
  budget->Reserve([](int64_t) { return int64_t{500}; });
  budget->Release(200);
  budget->RemoveListener(first_id);
  budget->Release(300);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 2);
}

TEST(MemoryBudgetTest, AListenerMayReserveAgain) {
  // A batcher woken by a release forms its next batch, which reserves:
  // Release() must not hold the budget's lock while it tells listeners.
  auto budget = MakeBudget(1000, 0, nullptr);
  budget->AddListener([&] {
    budget->Reserve([](int64_t available) { return available / 2; });
  });
  budget->Reserve([](int64_t) { return int64_t{1000}; });
  budget->Release(1000);
  EXPECT_EQ(budget->reserved_bytes(), 500);
}

}  // namespace
}  // namespace favor::batching
