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
// Symbols that are one value in the engine's sense (SymbolTable::same_symbol: the same number,
// or the same pure text), which a file from another writer may store more than once, are
// merged: the table keeps the first of each, and `merged` gets the map from every file symbol
// to its index in the table (a repeat to its first). `merged` is left empty when the symbols
// are distinct, as Qlik writes them. Number symbols are proven distinct while they are parsed
// (they increase, or their dense keys never meet); the rest take a hash of each symbol.
SymbolTable read_qvd_symbols(const FieldHeader& f, const std::uint8_t* body, std::vector<std::uint32_t>& merged,
                             CpuAccount* cpu);

}  // namespace assoc::detail
