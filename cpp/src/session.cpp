// Sessions: one user's selection states in an app (the default and alternate ones),
// serialised per session.
#include <algorithm>

#include "assoc/counters.hpp"
#include "assoc/error.hpp"
#include "assoc/selection.hpp"

namespace assoc {

Session::Session(std::shared_ptr<const AssociativeModel> model, std::string user, std::shared_ptr<const RowMask> mask)
    : model_(std::move(model)), user_(std::move(user)), mask_(std::move(mask)) {
  if (!model_) throw Error("internal: a session needs a model");
  if (mask_ && &mask_->model() != model_.get()) throw Error("internal: a row mask of another model");
  State first;
  first.selection.set_mask(mask_);
  states_.emplace("$", std::move(first));
  Counters::instance().session_opened(user_);
}

Session::~Session() { close(); }

bool Session::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

void Session::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  closed_ = true;
  for (auto& [name, s] : states_) s.rows.reset();
  Counters::instance().session_closed(user_);
}

void Session::require_open() const {
  if (closed_) throw Error("the session is closed");
}

Session::State& Session::slot(const std::string& name) {
  auto it = states_.find(name);
  if (it == states_.end()) throw Error("unknown state '" + name + "': add it first (add_state)");
  return it->second;
}

const Session::State& Session::slot(const std::string& name) const {
  auto it = states_.find(name);
  if (it == states_.end()) throw Error("unknown state '" + name + "': add it first (add_state)");
  return it->second;
}

void Session::evaluate(State& s) { s.rows = model_->rows(s.selection); }

void Session::add_state(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  if (name.empty() || name == "1" || name == "0")
    throw Error("a state's name must be non-empty and not '1' or '0' (set identifiers)");
  State added;
  added.selection.set_mask(mask_);
  states_.emplace(name, std::move(added));
}

void Session::remove_state(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  if (name == "$") throw Error("the default state '$' cannot be removed");
  slot(name);
  states_.erase(name);
}

std::vector<std::string> Session::state_names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  std::vector<std::string> out{"$"};
  for (const auto& [name, s] : states_)
    if (name != "$") out.push_back(name);
  return out;
}

std::map<std::string, SelectionState> Session::selections() const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  std::map<std::string, SelectionState> out;
  for (const auto& [name, s] : states_) out.emplace(name, s.selection);
  return out;
}

void Session::select(std::uint32_t field, std::vector<std::uint32_t> symbols, const std::string& state) {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  State& s = slot(state);
  const auto& fields = model_->data().fields();
  if (field >= fields.size()) throw Error("internal: field out of range");
  for (const std::uint32_t x : symbols)
    if (x >= fields[field].symbols.size()) throw Error("internal: symbol out of range");
  if (mask_) {  // values the user does not see are not there to select
    const Bitset& shown = mask_->values(field);
    symbols.erase(std::remove_if(symbols.begin(), symbols.end(), [&](std::uint32_t x) { return !shown.test(x); }),
                  symbols.end());
  }
  Counters::instance().selection();
  s.selection.set(field, std::move(symbols));
  evaluate(s);
}

void Session::set_search(std::uint32_t field, std::string text, const std::string& state) {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  slot(state).selection.set_search(field, std::move(text));
}

std::vector<std::uint32_t> Session::selected(std::uint32_t field, const std::string& state) const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  const auto& fields = slot(state).selection.fields();
  const auto it = fields.find(field);
  return it == fields.end() ? std::vector<std::uint32_t>{} : it->second;
}

std::string Session::search(std::uint32_t field, const std::string& state) const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  const std::string* text = slot(state).selection.search(field);
  return text != nullptr ? *text : std::string();
}

void Session::select_values(std::uint32_t field, const std::vector<DualView>& values, const std::string& state) {
  if (field >= model_->data().fields().size()) throw Error("internal: field out of range");
  model_->prepare_lookup(field);
  std::vector<std::uint32_t> symbols;
  symbols.reserve(values.size());
  for (const DualView& v : values) {
    const std::uint32_t s = model_->find_value(field, v);
    if (s != kNull) symbols.push_back(s);
  }
  select(field, std::move(symbols), state);
}

void Session::select_indices(std::uint32_t field, const std::vector<std::int64_t>& indices, const std::string& state) {
  if (field >= model_->data().fields().size()) throw Error("internal: field out of range");
  const std::uint64_t n = model_->data().fields()[field].symbols.size();
  std::vector<std::uint32_t> symbols;
  symbols.reserve(indices.size());
  for (const std::int64_t i : indices)
    if (i >= 0 && static_cast<std::uint64_t>(i) < n) symbols.push_back(static_cast<std::uint32_t>(i));
  select(field, std::move(symbols), state);
}

void Session::clear(const std::string& state) {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  State& s = slot(state);
  s.selection.clear();
  evaluate(s);
}

void Session::clear_field(std::uint32_t field, const std::string& state) {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  State& s = slot(state);
  s.selection.clear(field);
  evaluate(s);
}

SelectionState Session::selection(const std::string& state) const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  return slot(state).selection;
}

std::pair<SelectionState, std::shared_ptr<const RowStates>> Session::snapshot(const std::string& state) const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  const State& s = slot(state);
  return {s.selection, s.rows ? s.rows : model_->rows(s.selection)};
}

std::shared_ptr<const FieldStates> Session::field_states(std::uint32_t field, const std::string& state) const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  const State& s = slot(state);
  return model_->field_states(s.selection, field, s.rows);
}

std::uint64_t Session::possible_rows(std::uint32_t table, const std::string& state) const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  const State& s = slot(state);
  if (!s.rows) return model_->rows(s.selection)->possible.at(table);
  return s.rows->possible.at(table);
}

}  // namespace assoc
