// The number of members of an aggregate struct, at compile time, so that a
// table listing a struct's members can check that it lists them all.
//
// C++17 has no reflection. An aggregate can be brace-initialised from up to
// as many values as it has members, and not from more; AnyField converts to
// every member type, so the largest count that compiles is the member count.
// (Boost.PFR counts fields the same way.) Only for aggregates whose members
// are not themselves initialised by brace elision from several values: a
// member of class type takes one AnyField whole, as it converts to it.
#ifndef FAVOR_SERVER_MODEL_AGGREGATE_FIELD_COUNT_H_
#define FAVOR_SERVER_MODEL_AGGREGATE_FIELD_COUNT_H_

#include <cstddef>
#include <type_traits>
#include <utility>

namespace favor::model::internal {

// Converts to anything; only ever named in unevaluated context.
struct AnyField {
  template <typename T>
  operator T() const;  // NOLINT(google-explicit-constructor): the point
};

template <typename T, typename Indices, typename = void>
struct BraceInitializableFrom : std::false_type {};

template <typename T, size_t... I>
struct BraceInitializableFrom<
    T, std::index_sequence<I...>,
    std::void_t<decltype(T{(void(I), AnyField{})...})>> : std::true_type {};

template <typename T, size_t N = 0>
constexpr size_t AggregateFieldCount() {
  static_assert(std::is_aggregate_v<T>, "counts the members of aggregates");
  if constexpr (BraceInitializableFrom<
                    T, std::make_index_sequence<N + 1>>::value) {
    return AggregateFieldCount<T, N + 1>();
  } else {
    return N;
  }
}

}  // namespace favor::model::internal

#endif  // FAVOR_SERVER_MODEL_AGGREGATE_FIELD_COUNT_H_
