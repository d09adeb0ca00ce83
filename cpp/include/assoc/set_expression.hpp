#pragma once
// Set analysis (spec chart-expressions §2): a set expression {…} names a record set. A term is
// a selection state (identifier `$`, `1`, `0` or an alternate state's name, none: the
// object's state) with modifiers that replace the selection of the fields they name; the
// modified state is inferred across the whole model as a selection would be. Terms combine
// with + (union), - (difference, unary: complement), * (intersection), / (symmetric
// difference) per table, rows by rows. docs/hypercubes.md "Set analysis" holds the details.
// Under section access every set stays within the session's row mask: 1 is the mask's rows,
// a complement is taken within them, and E() holds no value off them.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "assoc/selection.hpp"

namespace assoc {

// The selection states a set may name: "$" (the default state) and alternate states by name.
using NamedStates = std::map<std::string, SelectionState>;

struct SetNode;

// One element of a literal list {…}.
struct SetElement {
  enum class Kind : std::uint8_t { kBare, kLiteral, kSearch };  // 2020 or Bolt, 'Bolt', "b*" [b*] `b*`
  Kind kind = Kind::kBare;
  std::string text;
  std::size_t position = 0;
};

// An element set: the values a modifier selects in its field.
struct ElementNode {
  enum class Kind : std::uint8_t { kList, kField, kP, kE, kNot, kOp };
  Kind kind = Kind::kList;
  char op = '+';
  std::vector<SetElement> elements;     // kList
  std::string state;                    // kField: the state prefix of state::F ("" none)
  std::string field;                    // kField; kP/kE: "" for the modifier's own field
  std::shared_ptr<const SetNode> set;   // kP/kE: null for the term's own state
  std::shared_ptr<const ElementNode> a, b;
  std::size_t position = 0;
};

// F = X, F += X, …; `value` null for F = (clears F).
struct FieldModifier {
  std::string field;
  std::size_t position = 0;
  char op = '=';  // '=' or the implicit operator + - * /
  std::shared_ptr<const ElementNode> value;
};

struct SetNode {
  enum class Kind : std::uint8_t { kTerm, kNot, kOp };
  Kind kind = Kind::kTerm;
  std::string ident;  // kTerm: "$", "1", "0", a state name, or "" (the object's state)
  std::vector<FieldModifier> modifiers;
  char op = '+';
  std::shared_ptr<const SetNode> a, b;
  std::size_t position = 0;
};

// Parses the text between { and } that starts at `offset` in the expression `expr`; errors
// name the position in `expr` and the problem.
std::shared_ptr<const SetNode> parse_set_expression(const std::string& expr, const std::string& text,
                                                    std::size_t offset);
// The set an aggregation's own set `inner` means inside an outer set's scope (§2.8): no
// identifier merges its modifiers into each term of the outer set (the inner one wins for a
// field both name); an identifier replaces the outer set. Either may be null.
std::shared_ptr<const SetNode> inherit_set(const std::shared_ptr<const SetNode>& outer,
                                           const std::shared_ptr<const SetNode>& inner);
// One text per meaning, for caches.
std::string canonical_set(const SetNode& set);

// Evaluates sets to record sets (possible rows per table), each distinct set once.
class SetEvaluator {
 public:
  // `states` holds "$" and the alternate states; `object_state` is the state of terms with no
  // identifier. `expr` is the text errors name. `known`, when given, is a state whose possible
  // rows `known_rows` the caller holds (the object's): a term that narrows it starts from them.
  SetEvaluator(const AssociativeModel& model, const NamedStates& states, std::string object_state, std::string expr,
               const SelectionState* known = nullptr, std::shared_ptr<const RowStates> known_rows = nullptr);
  std::shared_ptr<const RowStates> rows(const SetNode& set);

 private:
  struct Values;
  const SelectionState& state_named(const std::string& name, std::size_t position) const;
  // No selection, under the session's row mask (section access): identifier 1.
  SelectionState unselected() const;
  std::shared_ptr<const RowStates> term_rows(const SetNode& term);
  Values element_values(const ElementNode& e, std::uint32_t field, const SelectionState& base);
  Values list_values(const ElementNode& e, std::uint32_t field);
  Values selected_values(const SelectionState& state, std::uint32_t of_field, std::uint32_t field);
  Values search_expression(const std::string& cond, std::size_t position, std::uint32_t field);
  std::uint32_t field_named(const std::string& name, std::size_t position) const;
  [[noreturn]] void fail(std::size_t position, const std::string& what) const;

  const AssociativeModel& model_;
  const NamedStates& states_;
  std::string object_state_;
  std::string expr_;
  const SelectionState* known_;
  std::shared_ptr<const RowStates> known_rows_;
  std::map<std::string, std::shared_ptr<const RowStates>> cache_;  // by canonical text
};

// Case-insensitive whole-value match with * (any run; runs are one) and ? (one character),
// linear in the text: the pattern's pieces between *s are placed left to right, each at its
// first place. Letters fold by Unicode simple lower case for ASCII, Latin-1, Greek and Cyrillic.
bool search_match(std::string_view text, std::string_view pattern);

}  // namespace assoc
