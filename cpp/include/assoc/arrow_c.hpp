#pragma once
// The Arrow C data and C stream interfaces (the structs as the public Arrow specification
// defines them, https://arrow.apache.org/docs/format/CDataInterface.html and
// CStreamInterface.html), and the engine's readers and writers of them: tables come in from
// any Arrow producer and go out as dictionary-encoded columns built from symbol tables and
// packed indexes. No Arrow library is linked; the producer of what comes in is not trusted.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "assoc/bitset.hpp"
#include "assoc/data_model.hpp"
#include "assoc/thread_pool.hpp"

extern "C" {

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};

#endif  // ARROW_C_DATA_INTERFACE

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);
  void (*release)(struct ArrowArrayStream*);
  void* private_data;
};

#endif  // ARROW_C_STREAM_INTERFACE
}

namespace assoc {

// --- in

// A stream's schema and every batch it gave, taken over: released when this is destroyed.
class ArrowBatches {
 public:
  ArrowBatches();
  ~ArrowBatches();
  ArrowBatches(const ArrowBatches&) = delete;
  ArrowBatches& operator=(const ArrowBatches&) = delete;

  const ArrowSchema& schema() const { return schema_; }
  const std::vector<ArrowArray>& batches() const { return batches_; }

  // Reads the schema and all batches of `stream`, then releases it; a producer error throws
  // Error with the producer's message. (Call it where the producer's callbacks may run.)
  void read(ArrowArrayStream* stream);

 private:
  ArrowSchema schema_;
  std::vector<ArrowArray> batches_;
};

// How an imported column's symbols are to be shown: Qlik's day numbers of dates or
// timestamps get their text from the caller (set_texts), which knows the format in force.
enum class ArrowTemporal : std::uint8_t { kNone, kDate, kTimestamp };

struct ArrowImport {
  LoadedTable table;
  std::vector<ArrowTemporal> temporal;  // per column
};

// The table of a stream's batches: one column per top-level field (the schema must be a
// struct). Every length, offset, buffer count, dictionary index and text is checked; an
// unsupported type throws Error naming the column and the type.
ArrowImport import_arrow(const ArrowBatches& batches, const std::string& name, CpuAccount* cpu);

// --- out

// How a field whose values have both a number and a text goes out: its numbers, its texts,
// or a struct of both.
enum class ArrowDuals : std::uint8_t { kNumber, kText, kStruct };

// One column to export: rows of symbols (from a packed index, or from codes with kNull for
// NULL), or plain numbers (NaN for NULL).
struct ArrowExportColumn {
  std::string name;
  const SymbolTable* symbols = nullptr;
  const PackedIndex* index = nullptr;
  const std::vector<std::uint32_t>* codes = nullptr;
  const std::vector<double>* numbers = nullptr;
  // With `symbols` a subset of the codes' symbol table: each code's index in it (kNull: none).
  const std::vector<std::uint32_t>* symbol_map = nullptr;
  // The symbol table whose values decide the column's Arrow type when `symbols` holds only
  // some of them (a page, a user's values): a column has the same type whatever part of it
  // goes out. Null: `symbols` decides.
  const SymbolTable* typed_by = nullptr;
};

// Columns of `rows` rows; packed index columns keep only the rows set in `row_filter` when
// one is given (its size must be `rows`).
struct ArrowExportTable {
  std::vector<ArrowExportColumn> columns;
  std::size_t rows = 0;
  const Bitset* row_filter = nullptr;
};

// The schema of the export (a struct of the columns), written to `out`.
void export_arrow_schema(const ArrowExportTable& table, ArrowDuals duals, ArrowSchema* out);
// A stream of the table's rows as one batch, written to `out`; the stream owns its data.
void export_arrow_stream(const ArrowExportTable& table, ArrowDuals duals, ArrowArrayStream* out,
                         CpuAccount* cpu = nullptr);

}  // namespace assoc
