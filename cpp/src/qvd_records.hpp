#pragma once
// QVD records: per row, each field's symbol index at a fixed bit offset of a fixed-size
// record. A field's value is (record >> BitOffset) & mask, read as one 8-byte load at a fixed
// byte of the record; symbol = value + Bias, and a negative symbol is NULL.
#include <cstdint>
#include <vector>

#include "assoc/packed_index.hpp"
#include "assoc/thread_pool.hpp"
#include "qvd_header.hpp"

namespace assoc::detail {

// The records after the header (`body` = the bytes after its NUL, layout checked) as one packed
// index per field, with a code for NULL only where a row is NULL and the fewest bits that hold
// the symbols the rows use. Throws Error when a row names a symbol its field lacks.
std::vector<PackedIndex> read_qvd_records(const TableHeader& h, const std::uint8_t* body, CpuAccount* cpu);

}  // namespace assoc::detail
