// Sessions: one user's selection state in an app, serialised per session.
#include "assoc/counters.hpp"
#include "assoc/error.hpp"
#include "assoc/selection.hpp"

namespace assoc {

Session::Session(std::shared_ptr<const AssociativeModel> model, std::string user)
    : model_(std::move(model)), user_(std::move(user)) {
  if (!model_) throw Error("internal: a session needs a model");
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
  rows_.reset();
  Counters::instance().session_closed(user_);
}

void Session::require_open() const {
  if (closed_) throw Error("the session is closed");
}

void Session::evaluate() { rows_ = model_->rows(state_); }

void Session::select(std::uint32_t field, std::vector<std::uint32_t> symbols) {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  const auto& fields = model_->data().fields();
  if (field >= fields.size()) throw Error("internal: field out of range");
  for (const std::uint32_t s : symbols)
    if (s >= fields[field].symbols.size()) throw Error("internal: symbol out of range");
  Counters::instance().selection();
  state_.set(field, std::move(symbols));
  evaluate();
}

void Session::select_values(std::uint32_t field, const std::vector<DualView>& values) {
  if (field >= model_->data().fields().size()) throw Error("internal: field out of range");
  model_->prepare_lookup(field);
  std::vector<std::uint32_t> symbols;
  symbols.reserve(values.size());
  for (const DualView& v : values) {
    const std::uint32_t s = model_->find_value(field, v);
    if (s != kNull) symbols.push_back(s);
  }
  select(field, std::move(symbols));
}

void Session::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  state_.clear();
  evaluate();
}

void Session::clear_field(std::uint32_t field) {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  state_.clear(field);
  evaluate();
}

SelectionState Session::selection() const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  return state_;
}

std::shared_ptr<const FieldStates> Session::field_states(std::uint32_t field) const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  return model_->field_states(state_, field, rows_);
}

std::uint64_t Session::possible_rows(std::uint32_t table) const {
  std::lock_guard<std::mutex> lock(mutex_);
  require_open();
  if (!rows_) return model_->rows(state_)->possible.at(table);
  return rows_->possible.at(table);
}

}  // namespace assoc
