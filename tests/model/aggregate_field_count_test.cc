#include "server/model/aggregate_field_count.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace favor::model::internal {
namespace {

struct Empty {};
struct Scalars {
  int64_t a = 1;
  double b = 2;
  bool c = false;
};
enum class Colour { kRed, kBlue };
struct Mixed {
  std::string name;
  Colour colour = Colour::kBlue;
  std::vector<int> list;
  uint64_t seed = 0;
};
// A member of aggregate type counts once, not as its own members.
struct Nested {
  Scalars scalars;
  Mixed mixed;
  int last = 0;

  int Method() const { return last; }  // functions are not members counted
};

TEST(AggregateFieldCountTest, CountsDataMembers) {
  static_assert(AggregateFieldCount<Empty>() == 0);
  static_assert(AggregateFieldCount<Scalars>() == 3);
  static_assert(AggregateFieldCount<Mixed>() == 4);
  static_assert(AggregateFieldCount<Nested>() == 3);
  EXPECT_EQ(AggregateFieldCount<Mixed>(), 4u);
}

}  // namespace
}  // namespace favor::model::internal
