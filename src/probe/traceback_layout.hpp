// The arguments of a function that has no DWARF and no signature, as Go's
// own traceback prints them: the runtime's layout of its argument words
// (binary/arg_info.hpp), each word placed in its register or stack slot at
// the entry (binary/arg_places.hpp). Each word becomes a one-part
// ValueLayout of type uintptr, so capture planning and decoding are those of
// typed arguments; the grouping is put back when the words are printed.
#pragma once

#include <string>
#include <vector>

#include "probe/abi_layout.hpp"
#include "binary/arg_info.hpp"
#include "binary/arg_places.hpp"

namespace goscope {

struct TracebackLayout {
  std::vector<ArgInfoItem> args;   // the runtime's grouping
  std::vector<ValueLayout> words;  // one per Word of `args`, in order; a `problem` where its place is unknown
  // Where the places came from, for --explain and list: "the stack-growth
  // path's register saves", "integer registers in order (...)", or why not.
  std::string placesFrom;
  // A method whose receiver is typed from its named type's record
  // (probe/method_signature.hpp, inferReceiver): the first `receiverWords`
  // words are read and printed as one value of type `receiverType`.
  size_t receiverWords = 0;
  std::string receiverType;
};

TracebackLayout placeWords(std::vector<ArgInfoItem> args, const ArgPlaces& places);

}  // namespace goscope
