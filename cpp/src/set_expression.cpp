// Set analysis, the language: parsing set expressions into their trees, and the canonical text
// that keys a set (spec chart-expressions §2). Their record sets are set_evaluation.cpp's.
#include "assoc/set_expression.hpp"

#include <cctype>
#include <cstdlib>

#include "assoc/error.hpp"

namespace assoc {

namespace {

// ---- parsing ---------------------------------------------------------------------------------

bool name_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || c == '.' || c == '$' || c == '%' || c == '#' || c == '@' || u >= 0x80;
}

class SetParser {
 public:
  SetParser(const std::string& expr, const std::string& text, std::size_t offset)
      : expr_(expr), s_(text), offset_(offset) {}

  std::shared_ptr<const SetNode> parse() {
    auto out = parse_set(0);
    skip();
    if (pos_ < s_.size()) fail(pos_, std::string("unexpected '") + s_[pos_] + "' in the set expression");
    return out;
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    const std::string shown = expr_.size() > 60 ? expr_.substr(0, 57) + "..." : expr_;
    throw Error("expression '" + shown + "': " + what + " at position " + std::to_string(offset_ + at));
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c, const std::string& what) {
    if (!peek(c)) fail(pos_, std::string("expected '") + c + "' " + what);
    ++pos_;
  }
  std::size_t at() const { return offset_ + pos_; }

  // A name: [bracketed] or a run of name characters ("" when none).
  std::string name() {
    skip();
    if (pos_ < s_.size() && s_[pos_] == '[') {
      const std::size_t close = s_.find(']', pos_ + 1);
      if (close == std::string::npos) fail(pos_, "unclosed '['");
      std::string out = s_.substr(pos_ + 1, close - pos_ - 1);
      pos_ = close + 1;
      return out;
    }
    const std::size_t start = pos_;
    while (pos_ < s_.size() && name_char(s_[pos_])) {
      if (s_[pos_] == ':' ) break;
      ++pos_;
    }
    return s_.substr(start, pos_ - start);
  }

  // setexpr: terms with * / over + -, unary - binds tightest, all left to right.
  std::shared_ptr<const SetNode> parse_set(int level) {
    if (level > 200) fail(pos_, "set expression nested too deeply");
    auto lhs = parse_product(level);
    for (;;) {
      skip();
      if (pos_ >= s_.size() || (s_[pos_] != '+' && s_[pos_] != '-')) return lhs;
      const char op = s_[pos_++];
      lhs = binary(op, lhs, parse_product(level));
    }
  }
  std::shared_ptr<const SetNode> parse_product(int level) {
    auto lhs = parse_unary(level);
    for (;;) {
      skip();
      if (pos_ >= s_.size() || (s_[pos_] != '*' && s_[pos_] != '/')) return lhs;
      const char op = s_[pos_++];
      lhs = binary(op, lhs, parse_unary(level));
    }
  }
  std::shared_ptr<const SetNode> binary(char op, std::shared_ptr<const SetNode> a, std::shared_ptr<const SetNode> b) {
    auto n = std::make_shared<SetNode>();
    n->kind = SetNode::Kind::kOp;
    n->op = op;
    n->position = a->position;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }
  std::shared_ptr<const SetNode> parse_unary(int level) {
    skip();
    const std::size_t start = at();
    if (peek('-')) {
      ++pos_;
      auto n = std::make_shared<SetNode>();
      n->kind = SetNode::Kind::kNot;
      n->position = start;
      n->a = parse_unary(level + 1);
      return n;
    }
    if (peek('(')) {
      ++pos_;
      auto inner = parse_set(level + 1);
      expect(')', "to close '(' in the set expression");
      return inner;
    }
    auto n = std::make_shared<SetNode>();
    n->position = start;
    if (pos_ >= s_.size()) fail(pos_, "a set identifier or modifier is missing");
    if (s_[pos_] != '<') {
      if (s_[pos_] == '$') {
        ++pos_;
        if (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
          fail(pos_ - 1, "selection history ($1, $_1) is not supported");
        n->ident.assign(1, '$');  // not = "$": GCC 12 warns of a false overlap (-Wrestrict)
      } else {
        n->ident = name();
        if (n->ident.empty()) fail(pos_, std::string("unexpected '") + s_[pos_] + "' in the set expression");
        if (peek(':')) fail(pos_, "bookmarks of a state (state::bookmark) are not supported");
      }
    }
    if (peek('<')) n->modifiers = parse_modifier(level);
    return n;
  }

  std::vector<FieldModifier> parse_modifier(int level) {
    ++pos_;  // '<'
    std::vector<FieldModifier> out;
    for (;;) {
      FieldModifier m;
      skip();
      m.position = at();
      m.field = name();
      if (m.field.empty()) fail(pos_, "a field name is missing in the set modifier");
      skip();
      if (pos_ < s_.size() && std::string_view("+-*/").find(s_[pos_]) != std::string_view::npos &&
          pos_ + 1 < s_.size() && s_[pos_ + 1] == '=') {
        m.op = s_[pos_];
        pos_ += 2;
      } else if (pos_ < s_.size() && s_[pos_] == '=') {
        ++pos_;
      } else {
        fail(pos_, "expected '=' (or += -= *= /=) after the field '" + m.field + "' in the set modifier");
      }
      skip();
      if (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '>') m.value = parse_elements(level + 1);
      if (!m.value && m.op != '=') fail(pos_, "'" + std::string(1, m.op) + "=' needs an element set");
      out.push_back(std::move(m));
      skip();
      if (peek(',')) {
        ++pos_;
        continue;
      }
      expect('>', "to close the set modifier");
      return out;
    }
  }

  std::shared_ptr<const ElementNode> elem_binary(char op, std::shared_ptr<const ElementNode> a,
                                                 std::shared_ptr<const ElementNode> b) {
    auto n = std::make_shared<ElementNode>();
    n->kind = ElementNode::Kind::kOp;
    n->op = op;
    n->position = a->position;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }
  std::shared_ptr<const ElementNode> parse_elements(int level) {
    if (level > 200) fail(pos_, "set expression nested too deeply");
    auto lhs = parse_elem_product(level);
    for (;;) {
      skip();
      if (pos_ >= s_.size() || (s_[pos_] != '+' && s_[pos_] != '-')) return lhs;
      const char op = s_[pos_++];
      lhs = elem_binary(op, lhs, parse_elem_product(level));
    }
  }
  std::shared_ptr<const ElementNode> parse_elem_product(int level) {
    auto lhs = parse_elem_unary(level);
    for (;;) {
      skip();
      if (pos_ >= s_.size() || (s_[pos_] != '*' && s_[pos_] != '/')) return lhs;
      const char op = s_[pos_++];
      lhs = elem_binary(op, lhs, parse_elem_unary(level));
    }
  }
  std::shared_ptr<const ElementNode> parse_elem_unary(int level) {
    skip();
    auto n = std::make_shared<ElementNode>();
    n->position = at();
    if (pos_ >= s_.size()) fail(pos_, "an element set is missing");
    const char c = s_[pos_];
    if (c == '-') {
      ++pos_;
      n->kind = ElementNode::Kind::kNot;
      n->a = parse_elem_unary(level + 1);
      return n;
    }
    if (c == '(') {
      ++pos_;
      auto inner = parse_elements(level + 1);
      expect(')', "to close '(' in the element set");
      return inner;
    }
    if (c == '{') {
      ++pos_;
      n->kind = ElementNode::Kind::kList;
      if (peek('}')) {
        ++pos_;
        return n;
      }
      for (;;) {
        n->elements.push_back(element());
        if (peek(',')) {
          ++pos_;
          continue;
        }
        expect('}', "to close the element list (a value with blanks needs quotes)");
        return n;
      }
    }
    const std::size_t start = pos_;
    std::string word = name();
    if (word.empty()) fail(pos_, std::string("unexpected '") + c + "' in the element set");
    const bool bracketed = s_[start] == '[';
    if (!bracketed && (word == "P" || word == "p" || word == "E" || word == "e") && peek('(')) {
      ++pos_;
      n->kind = word == "P" || word == "p" ? ElementNode::Kind::kP : ElementNode::Kind::kE;
      if (peek('{')) {
        ++pos_;
        n->set = parse_set(level + 1);
        if (!peek('}')) fail(pos_, "expected '}' to close the set of " + word + "()");
        ++pos_;
      }
      skip();
      if (!peek(')')) n->field = name();
      expect(')', "to close " + word + "(");
      return n;
    }
    n->kind = ElementNode::Kind::kField;
    if (pos_ + 1 < s_.size() && s_[pos_] == ':' && s_[pos_ + 1] == ':') {
      pos_ += 2;
      n->state = word;
      n->field = name();
      if (n->field.empty()) fail(pos_, "a field name is missing after '" + word + "::'");
    } else {
      n->field = word;
    }
    return n;
  }

  SetElement element() {
    skip();
    SetElement e;
    e.position = at();
    if (pos_ >= s_.size()) fail(pos_, "unclosed element list");
    const char c = s_[pos_];
    if (c == '\'' || c == '"' || c == '`' || c == '[') {
      const char close = c == '[' ? ']' : c;
      e.kind = c == '\'' ? SetElement::Kind::kLiteral : SetElement::Kind::kSearch;
      const std::size_t start = pos_++;
      for (;;) {
        if (pos_ >= s_.size()) fail(start, std::string("unclosed ") + c);
        if (s_[pos_] == close) {
          if (close != ']' && pos_ + 1 < s_.size() && s_[pos_ + 1] == close) {
            e.text.push_back(close);
            pos_ += 2;
            continue;
          }
          ++pos_;
          break;
        }
        e.text.push_back(s_[pos_++]);
      }
      return e;
    }
    if (c == '$' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '(')
      fail(pos_, "dollar-sign expansions $(…) are not supported yet");
    const std::size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '}' && !std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
    e.text = s_.substr(start, pos_ - start);
    if (e.text.empty()) fail(pos_, "an element is missing in the element list");
    return e;
  }

  const std::string& expr_;
  const std::string& s_;
  std::size_t offset_;
  std::size_t pos_ = 0;
};

// ---- canonical text ----------------------------------------------------------------------------

void quote(std::string& out, const std::string& s, char q) {
  out.push_back(q);
  for (const char c : s) {
    if (c == q) out.push_back(q);
    out.push_back(c);
  }
  out.push_back(q);
}

void put_elements(std::string& out, const ElementNode& e);
void put_set(std::string& out, const SetNode& s);

void put_elements(std::string& out, const ElementNode& e) {
  switch (e.kind) {
    case ElementNode::Kind::kList:
      out += "{";
      for (const SetElement& x : e.elements) {
        quote(out, x.text, x.kind == SetElement::Kind::kBare ? '`' : x.kind == SetElement::Kind::kLiteral ? '\'' : '"');
        out += ",";
      }
      out += "}";
      break;
    case ElementNode::Kind::kField:
      quote(out, e.state, '[');
      quote(out, e.field, '[');
      break;
    case ElementNode::Kind::kP:
    case ElementNode::Kind::kE:
      out += e.kind == ElementNode::Kind::kP ? "P(" : "E(";
      if (e.set) put_set(out, *e.set);
      quote(out, e.field, '[');
      out += ")";
      break;
    case ElementNode::Kind::kNot:
      out += "-(";
      put_elements(out, *e.a);
      out += ")";
      break;
    case ElementNode::Kind::kOp:
      out += "(";
      put_elements(out, *e.a);
      out.push_back(e.op);
      put_elements(out, *e.b);
      out += ")";
      break;
  }
}

void put_set(std::string& out, const SetNode& s) {
  switch (s.kind) {
    case SetNode::Kind::kTerm:
      quote(out, s.ident, '[');
      out += "<";
      for (const FieldModifier& m : s.modifiers) {
        quote(out, m.field, '[');
        out.push_back(m.op);
        out += "=";
        if (m.value) put_elements(out, *m.value);
        out += ";";
      }
      out += ">";
      break;
    case SetNode::Kind::kNot:
      out += "-(";
      put_set(out, *s.a);
      out += ")";
      break;
    case SetNode::Kind::kOp:
      out += "(";
      put_set(out, *s.a);
      out.push_back(s.op);
      put_set(out, *s.b);
      out += ")";
      break;
  }
}

std::shared_ptr<const SetNode> with_modifiers(const std::shared_ptr<const SetNode>& s,
                                              const std::vector<FieldModifier>& mods) {
  auto n = std::make_shared<SetNode>(*s);
  if (s->kind == SetNode::Kind::kTerm) {
    for (const FieldModifier& m : mods) {
      std::erase_if(n->modifiers, [&](const FieldModifier& x) { return x.field == m.field; });
      n->modifiers.push_back(m);
    }
    return n;
  }
  n->a = with_modifiers(s->a, mods);
  if (s->b) n->b = with_modifiers(s->b, mods);
  return n;
}

}  // namespace

std::shared_ptr<const SetNode> parse_set_expression(const std::string& expr, const std::string& text,
                                                    std::size_t offset) {
  return SetParser(expr, text, offset).parse();
}

std::shared_ptr<const SetNode> inherit_set(const std::shared_ptr<const SetNode>& outer,
                                           const std::shared_ptr<const SetNode>& inner) {
  if (!inner) return outer;
  if (!outer) return inner;
  if (inner->kind != SetNode::Kind::kTerm || !inner->ident.empty()) return inner;
  return with_modifiers(outer, inner->modifiers);
}

std::string canonical_set(const SetNode& set) {
  std::string out;
  put_set(out, set);
  return out;
}

}  // namespace assoc
