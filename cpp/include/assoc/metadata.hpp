#pragma once
// DataModelMetadata as the metadata endpoint reports it.
#include <cstdint>
#include <string>
#include <vector>

#include "assoc/data_model.hpp"

namespace assoc {

struct FieldMetadata {
  std::string name;
  std::vector<std::string> src_tables;
  bool is_system = false, is_hidden = false, is_semantic = false, distinct_only = false;
  std::int64_t cardinal = 0;
  std::int64_t total_count = 0;
  bool is_locked = false, always_one_selected = false, is_numeric = false;
  std::string comment;
  std::vector<std::string> tags;
  std::int64_t byte_size = 0;
};

struct TableMetadata {
  std::string name;
  bool is_system = false, is_semantic = false, is_loose = false;
  std::int64_t no_of_rows = 0;
  std::int64_t no_of_fields = 0;
  std::int64_t no_of_key_fields = 0;
  std::string comment;
  std::int64_t byte_size = 0;
};

struct ModelMetadata {
  std::int64_t cpu_time_spent_ms = 0;
  std::int64_t logical_cores = 0;
  std::int64_t total_memory = 0;
  std::int64_t static_byte_size = 0;
  std::vector<FieldMetadata> fields;
  std::vector<TableMetadata> tables;
};

// Metadata of a model, computed from its structures.
ModelMetadata describe(const DataModel& model);

}  // namespace assoc
