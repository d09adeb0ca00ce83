#pragma once
// CSV text (UTF-8, a header row, RFC 4180 quoting) read into one loaded table.
//
// The rules a user can rely on:
// - A leading UTF-8 byte order mark is skipped; any other invalid UTF-8 is an error.
// - The first line is the header: one field name per column; empty or repeated names are errors.
// - The separator is the one of `,` `;` TAB that occurs most often in the header line outside
//   quotes (ties in that order); a header without any of them makes a one-column table.
// - Fields may be quoted: separators, line ends and doubled quotes ("") inside quotes are data.
//   A quote inside an unquoted field is an ordinary character; text between a closing quote
//   and the next separator or line end is an error.
// - Lines end with LF or CRLF; the last line may lack one. Blank lines are skipped.
// - Every row must have as many fields as the header; a row with more or fewer is an error
//   that names its line.
// - An empty field (quoted or not) is NULL. A field that reads as a number (integer or decimal,
//   optional sign and exponent) is numeric; when its text is not the number's canonical form
//   (`007`, `1.50`, `+3`, `1e3`) the value is a dual that keeps the text. Anything else is text.
#include <cstddef>
#include <string>

#include "assoc/data_model.hpp"
#include "assoc/thread_pool.hpp"

namespace assoc {

// How quotes are read: as above (RFC 4180), or as a load script's `txt` files read them.
enum class CsvQuoting {
  kRfc4180,  // the rules above; also a script's `msq` (double quotes, line ends inside them)
  // A script's standard quoting: a value whose first and last non-blank characters are both `"`
  // or both `'` is what stands between them (a doubled quote inside is one); quotes never span
  // lines, and any other quote is an ordinary character.
  kStandard,
  kNone,  // a script's `no quotes`: every quote is an ordinary character
};

// Reads `size` bytes of CSV into a table named `table_name`, on up to threads() threads.
// Throws Error naming the line of the first problem. `cpu` (may be null) collects the CPU
// time of every thread that works on it.
LoadedTable read_csv(const char* data, std::size_t size, const std::string& table_name, CpuAccount* cpu,
                     CsvQuoting quoting = CsvQuoting::kRfc4180);

}  // namespace assoc
