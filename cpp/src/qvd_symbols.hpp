#pragma once
// One QVD field's symbol table, read from its section of the bytes after the header.
#include <cstdint>

#include "assoc/symbol_table.hpp"
#include "assoc/thread_pool.hpp"
#include "qvd_header.hpp"

namespace assoc::detail {

// The symbols of field `f`, whose section lies at body + f.offset (layout checked, bytes all
// present); symbols keep file order. Throws Error naming the first malformed symbol.
SymbolTable read_qvd_symbols(const FieldHeader& f, const std::uint8_t* body, CpuAccount* cpu);

}  // namespace assoc::detail
