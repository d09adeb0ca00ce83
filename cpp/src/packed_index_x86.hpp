#pragma once
// The x86 vector kernels of PackedIndex (packed_index_x86.cpp): decoding and code-set matching
// of whole 64-row blocks with AVX-512 (VBMI) or AVX2, as the CPU and ASSOC_SIMD allow.
#include <cstddef>
#include <cstdint>

namespace assoc::detail {

// Decodes as many of the whole blocks [first, first+n) of a column of `width` bits as a
// vector kernel takes, into out (symbol indexes, less `bias`); how many (0: none, the portable
// loop decodes them). Only the first `reach` blocks may be read with 16-byte loads
// (PackedIndex::vector_blocks).
std::size_t vector_decode(const std::uint8_t* data, std::uint32_t width, std::size_t first, std::size_t n,
                          std::size_t reach, std::uint32_t bias, std::uint32_t* out);

// PackedIndex::match_codes for as many blocks as a vector kernel takes; how many.
std::size_t vector_match(const std::uint8_t* data, std::uint32_t width, std::size_t first, std::size_t n,
                         std::size_t reach, const std::uint8_t* code_set, std::uint64_t* out);

}  // namespace assoc::detail
