#ifndef HVD_COMMON_EDIT_DISTANCE_H_
#define HVD_COMMON_EDIT_DISTANCE_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace hvd {

// The edits (insert, delete, replace, swap of two neighbours) that turn `a` into `b`, counted
// up to `limit` + 1: what "did you mean" guesses for a mistyped option or variable rank by.
// Pure; O(|a| |b|), and O(1) when the lengths alone differ by more than `limit`.
size_t EditDistance(std::string_view a, std::string_view b, size_t limit);

// The guesses as "did you mean" names them: "--a", or "one of --a, --b" (in their order).
std::string GuessList(const std::vector<std::string>& guesses);

}  // namespace hvd

#endif  // HVD_COMMON_EDIT_DISTANCE_H_
