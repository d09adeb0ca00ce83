#pragma once
// QVD, Qlik's table file: an XML header, then one symbol table per field, then one
// bit-stuffed record of symbol indexes per row.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "assoc/data_model.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {

// Reads a whole QVD file held in memory into a table with its own symbol tables; symbols
// keep file order, number formats and field tags come from the header. Malformed input
// throws Error naming the problem. CPU time (worker threads included) goes to `cpu`.
LoadedTable read_qvd(const std::uint8_t* data, std::size_t size, CpuAccount* cpu = nullptr);

// Tags and comments a load script gave (TAG, COMMENT), by field name, written on top of the
// model's own: tags after the field's, a comment in place of the model's.
struct QvdAnnotations {
  std::map<std::string, std::vector<std::string>> field_tags;
  std::map<std::string, std::string> field_comments;
  std::optional<std::string> table_comment;
  std::map<std::string, std::vector<std::string>> field_untags;  // tags UNTAG took off
};

// Writes one table of a model as a QVD file laid out as Qlik writes it: only the symbols the
// table uses, in first-occurrence order, and the fewest bits per field. Each field's Tags are
// its tags as metadata reports them: $key when it links tables, the data tags of the table's
// own symbols, the tags its source gave, then `annotations`' tags.
std::vector<std::uint8_t> write_qvd(const DataModel& model, const Table& table,
                                    const QvdAnnotations& annotations = {});

}  // namespace assoc
