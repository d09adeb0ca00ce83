#pragma once
// A chunk's rows of a row set, packed: the values of the rows whose bits are set, or those
// rows' positions, to the front of an array. With AVX-512, 16 rows a step (vpcompressd); with
// AVX2, 8 (a permutation looked up per byte of row bits); elsewhere (or with ASSOC_SIMD=0) bit
// by bit.
#include <cstddef>
#include <cstdint>

namespace assoc::detail {

// The values of the rows of `words` (bit j of word w: value 64w + j; `count` values, bits past
// them clear) packed to the front of `out`; how many. `out` may be `in` (values only move
// down). Both hold `count` rounded up to 16 values: a load may read up to 15 past `count`, a
// store may write up to 15 past the last value kept.
std::size_t compress_rows(const std::uint64_t* words, std::size_t count, const std::uint32_t* in, std::uint32_t* out);

// The positions of the rows of `words` (as above) into `out` (room for `count` rounded up to
// 16); how many.
std::size_t row_positions(const std::uint64_t* words, std::size_t count, std::uint32_t* out);

}  // namespace assoc::detail
