#pragma once
// QVD, Qlik's table file: an XML header, then one symbol table per field, then one
// bit-stuffed record of symbol indexes per row.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "assoc/data_model.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {

// Reads a whole QVD file held in memory into a table with its own symbol tables; symbols
// keep file order, number formats and field tags come from the header. Malformed input
// throws Error naming the problem. CPU time (worker threads included) goes to `cpu`.
LoadedTable read_qvd(const std::uint8_t* data, std::size_t size, CpuAccount* cpu = nullptr);

// Writes one table of a model as a QVD file laid out as Qlik writes it: only the symbols the
// table uses, in first-occurrence order, and the fewest bits per field.
std::vector<std::uint8_t> write_qvd(const DataModel& model, const Table& table);

}  // namespace assoc
