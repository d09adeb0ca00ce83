#pragma once
// One QVD field's symbol table, read from its section of the bytes after the header.
#include <cstdint>
#include <vector>

#include "assoc/symbol_table.hpp"
#include "assoc/thread_pool.hpp"
#include "qvd_header.hpp"

namespace assoc::detail {

// The symbols of field `f`, whose section lies at body + f.offset (layout checked, bytes all
// present); symbols keep file order. Throws Error naming the first malformed symbol.
SymbolTable read_qvd_symbols(const FieldHeader& f, const std::uint8_t* body, CpuAccount* cpu);

// Merges symbols that are one value in the engine's sense (SymbolTable::same_symbol: the same
// number, or the same pure text) which a file from another writer stores more than once: `t`
// keeps the first of each, and the result maps every file symbol to its index in `t` (a
// duplicate to its first). Empty when the symbols are distinct, as Qlik writes them; then `t`
// is untouched. Proving that costs one pass for increasing numbers, else a hash of each symbol.
std::vector<std::uint32_t> merge_duplicate_symbols(SymbolTable& t, CpuAccount* cpu);

}  // namespace assoc::detail
