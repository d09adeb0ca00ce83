#include "assoc/state_functions.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "assoc/error.hpp"
#include "assoc/expression_plan.hpp"
#include "assoc/functions.hpp"
#include "assoc/hypercube.hpp"

namespace assoc {

namespace {

constexpr StateFunction kStateFunctions[] = {
    {"GetSelectedCount", 1, 3},
    {"GetPossibleCount", 1, 2},
    {"GetFieldSelections", 1, 4},
};

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

[[noreturn]] void fail(const Expression& e, std::size_t position, const std::string& what) {
  throw Error("expression '" + e.text.substr(0, 200) + "': " + what + " at position " + std::to_string(position));
}

// An argument that must be a constant (a value, or functions of values: True()): its value.
Value constant_arg(const Expression& e, const ExprNode& call, std::size_t i) {
  const ExprNode& a = e.nodes[call.args[i]];
  if (a.kind == ExprNode::Kind::kConst) return a.value;
  bool constant = true;
  const Plan plan = Plan::bind(e, call.args[i], [&](std::uint32_t) -> std::uint32_t {
    constant = false;
    return 0;
  });
  if (!constant || !plan.is_constant())
    fail(e, a.position, "argument " + std::to_string(i + 1) + " of " + call.name + " must be a constant");
  return plan.constant();
}

// The field a state function reads: a field name, or a text naming one.
std::uint32_t field_arg(const Expression& e, const ExprNode& call, const AssociativeModel& model) {
  const ExprNode& a = e.nodes[call.args[0]];
  std::string name;
  if (a.kind == ExprNode::Kind::kField) {
    name = a.name;
  } else if (a.kind == ExprNode::Kind::kConst && a.value.has_text) {
    name = a.value.text;
  } else {
    fail(e, a.position, "argument 1 of " + call.name + " must be a field");
  }
  const int field = model.data().find_field(name);
  if (field < 0) fail(e, a.position, "field not found: " + name);
  return static_cast<std::uint32_t>(field);
}

Value evaluate(const Expression& e, const ExprNode& call, const StateFunction& fn, const AssociativeModel& model,
               const NamedStates& states, const std::string& object_state) {
  const std::uint32_t field = field_arg(e, call, model);
  // The state argument's place: GetSelectedCount(f, incl, state), GetFieldSelections(f, sep, max, state).
  const std::size_t state_at = iequal(fn.name, "GetSelectedCount") ? 2 : iequal(fn.name, "GetFieldSelections") ? 3 : 99;
  std::string state_name = object_state;
  if (call.args.size() > state_at) {
    const Value v = constant_arg(e, call, state_at);
    if (!v.is_null() && !shown_text(v).empty()) state_name = shown_text(v);
  }
  const auto it = states.find(state_name);
  if (it == states.end()) fail(e, call.position, "unknown state '" + state_name + "' in " + call.name);
  const SelectionState& state = it->second;
  if (iequal(fn.name, "GetSelectedCount")) {
    const bool with_excluded = call.args.size() > 1 && is_true(constant_arg(e, call, 1));
    const auto fs = model.field_states(state, field);
    // Selected values other selections exclude count only when asked for.
    return Value::number(static_cast<double>(fs->n_selected - (with_excluded ? 0 : fs->n_selected_excluded)));
  }
  if (iequal(fn.name, "GetPossibleCount")) {
    const auto fs = model.field_states(state, field);
    return Value::number(
        static_cast<double>(state.has(field) ? fs->n_selected - fs->n_selected_excluded : fs->n_possible));
  }
  // GetFieldSelections(f [, separator [, max values [, state]]]).
  std::string separator = ", ";
  if (call.args.size() > 1 && !constant_arg(e, call, 1).is_null()) separator = shown_text(constant_arg(e, call, 1));
  double max_values = 6;
  if (call.args.size() > 2) {
    const double m = numeric_of(constant_arg(e, call, 2));
    if (!std::isnan(m)) max_values = std::floor(m);
  }
  if (!state.has(field)) return Value::null();
  const std::vector<std::uint32_t>& selected = state.fields().at(field);
  if (selected.empty()) return Value::null();
  if (const std::string* search = state.search(field)) return Value::of_text(*search);
  const SymbolTable& symbols = model.data().fields()[field].symbols;
  const std::size_t total = symbols.size();
  if (selected.size() >= total) return Value::of_text("ALL");
  const auto join = [&](const std::vector<std::uint32_t>& codes) {
    std::string out;
    for (std::size_t i = 0; i < codes.size(); ++i) {
      if (i > 0) out += separator;
      out += shown_text(symbol_value(symbols, codes[i]));
    }
    return out;
  };
  if (static_cast<double>(selected.size()) <= max_values) return Value::of_text(join(selected));
  if (static_cast<double>(total - selected.size()) <= max_values) {
    std::vector<std::uint32_t> others;
    for (std::uint32_t s = 0, k = 0; s < total; ++s) {
      while (k < selected.size() && selected[k] < s) ++k;
      if (k == selected.size() || selected[k] != s) others.push_back(s);
    }
    return Value::of_text("NOT " + join(others));
  }
  return Value::of_text(std::to_string(selected.size()) + " of " + std::to_string(total));
}

}  // namespace

const StateFunction* find_state_function(std::string_view name) {
  for (const StateFunction& f : kStateFunctions)
    if (iequal(f.name, name)) return &f;
  return nullptr;
}

void fold_state_functions(Expression& e, const AssociativeModel& model, const NamedStates& states,
                          const std::string& object_state) {
  for (ExprNode& x : e.nodes) {
    if (x.kind != ExprNode::Kind::kCall) continue;
    const StateFunction* fn = find_state_function(x.name);
    if (fn == nullptr) continue;
    const Value v = evaluate(e, x, *fn, model, states, object_state);
    x.kind = ExprNode::Kind::kConst;
    x.value = v;
    x.args.clear();
  }
}

}  // namespace assoc
