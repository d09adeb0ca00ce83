// The XML subset reader: one pass over the document, UTF-8 checked first.
#include "xml_subset.hpp"

#include <charconv>
#include <cstdint>

#include "assoc/error.hpp"
#include "assoc/utf8.hpp"

namespace assoc::detail {
namespace {


class XmlReader {
 public:
  XmlReader(std::string_view doc, std::string_view context) : s_(doc), context_(context) {}

  // Reads the document; its root element must be named `root`.
  XmlElement read_document(std::string_view root) {
    check_characters();
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    skip_misc();
    if (at_end() || s_[pos_] != '<') error("no root element");
    XmlElement e;
    read_element(e, 0, root);
    skip_misc();
    if (!at_end()) error("content after the root element");
    return e;
  }

 private:
  static constexpr int kMaxDepth = 32;

  [[noreturn]] void error(const std::string& what) const {
    throw Error(std::string(context_) + " is malformed at byte " + std::to_string(pos_) + ": " + what);
  }
  bool at_end() const { return pos_ >= s_.size(); }
  bool starts(std::string_view t) const { return s_.substr(pos_, t.size()) == t; }

  // The header must be UTF-8 without the control characters XML 1.0 forbids.
  void check_characters() {
    const auto* p = reinterpret_cast<const unsigned char*>(s_.data());
    for (std::size_t i = 0; i < s_.size(); ++i) {
      if (p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') {
        pos_ = i;
        error("control character " + std::to_string(p[i]) + " is not allowed in XML");
      }
    }
    if (!valid_utf8(p, s_.size())) error("the header is not valid UTF-8");
  }

  bool skip_space() {
    const std::size_t start = pos_;
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
    return pos_ > start;
  }

  // Moves past the next `end`.
  void skip_past(std::string_view end, const char* what) {
    const std::size_t at = s_.find(end, pos_);
    if (at == std::string_view::npos) error(std::string("unterminated ") + what);
    pos_ = at + end.size();
  }

  // Whitespace, comments and processing instructions between elements.
  void skip_misc() {
    for (;;) {
      skip_space();
      if (starts("<?")) {
        skip_past("?>", "processing instruction");
      } else if (starts("<!--")) {
        skip_past("-->", "comment");
      } else if (starts("<!")) {
        error("document type declarations are not allowed");
      } else {
        return;
      }
    }
  }

  static bool name_start(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || c >= 0x80;
  }
  static bool name_char(unsigned char c) { return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

  std::string_view read_name() {
    const std::size_t start = pos_;
    if (at_end() || !name_start(static_cast<unsigned char>(s_[pos_]))) error("expected a name");
    while (!at_end() && name_char(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  void expect(char c) {
    if (at_end() || s_[pos_] != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }

  // An entity or character reference at '&', decoded into `out`.
  void read_reference(std::string& out) {
    const std::size_t semi = s_.find(';', pos_);
    if (semi == std::string_view::npos || semi - pos_ > 12) error("'&' that starts no reference (write &amp;)");
    const std::string_view ref = s_.substr(pos_ + 1, semi - pos_ - 1);
    if (ref == "amp") {
      out += '&';
    } else if (ref == "lt") {
      out += '<';
    } else if (ref == "gt") {
      out += '>';
    } else if (ref == "quot") {
      out += '"';
    } else if (ref == "apos") {
      out += '\'';
    } else if (ref.size() >= 2 && ref[0] == '#') {
      const bool hex = ref[1] == 'x';
      const std::string_view digits = ref.substr(hex ? 2 : 1);
      std::uint32_t cp = 0;
      const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      const bool allowed = cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
                           (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
      if (digits.empty() || res.ec != std::errc() || res.ptr != digits.data() + digits.size() || !allowed)
        error("bad character reference &" + std::string(ref) + ";");
      append_utf8(out, static_cast<char32_t>(cp));
    } else {
      error("unknown entity &" + std::string(ref) + ";");
    }
    pos_ = semi + 1;
  }

  // Character data up to the next '<' (or `quote` in an attribute value), with references
  // decoded and line ends normalised to '\n' as XML requires.
  void read_chars(std::string& out, char quote) {
    while (!at_end()) {
      const char c = s_[pos_];
      if (c == '<' || c == quote) return;
      if (c == '&') {
        read_reference(out);
      } else if (c == '\r') {
        out += '\n';
        ++pos_;
        if (!at_end() && s_[pos_] == '\n') ++pos_;
      } else {
        std::size_t end = pos_ + 1;
        while (end < s_.size() && s_[end] != '<' && s_[end] != '&' && s_[end] != '\r' && s_[end] != quote) ++end;
        out.append(s_.data() + pos_, end - pos_);
        pos_ = end;
      }
    }
  }

  void read_element(XmlElement& e, int depth, std::string_view root) {
    if (depth > kMaxDepth) error("elements nested deeper than " + std::to_string(kMaxDepth));
    ++pos_;  // '<'
    e.name = std::string(read_name());
    if (depth == 0 && e.name != root)
      throw Error(std::string(context_) + "'s root element is <" + e.name + ">, not <" + std::string(root) + ">");
    for (;;) {  // attributes: read for well-formedness, not used
      const bool space = skip_space();
      if (at_end()) error("unterminated start tag <" + e.name + ">");
      if (starts("/>")) {
        pos_ += 2;
        return;
      }
      if (s_[pos_] == '>') {
        ++pos_;
        break;
      }
      if (!space) error("expected whitespace before an attribute of <" + e.name + ">");
      read_name();
      skip_space();
      expect('=');
      skip_space();
      if (at_end() || (s_[pos_] != '"' && s_[pos_] != '\'')) error("attribute value without quotes");
      const char q = s_[pos_++];
      std::string ignored;
      read_chars(ignored, q);
      if (at_end() || s_[pos_] != q) error("'<' in an attribute value, or an unterminated attribute value");
      ++pos_;
    }
    for (;;) {  // content
      if (at_end()) error("<" + e.name + "> is never closed");
      if (s_[pos_] != '<') {
        read_chars(e.text, '<');
      } else if (starts("</")) {
        pos_ += 2;
        const std::string_view closing = read_name();
        if (closing != e.name) error("</" + std::string(closing) + "> closes <" + e.name + ">");
        skip_space();
        expect('>');
        return;
      } else if (starts("<!--")) {
        skip_past("-->", "comment");
      } else if (starts("<![CDATA[")) {
        pos_ += 9;
        const std::size_t end = s_.find("]]>", pos_);
        if (end == std::string_view::npos) error("unterminated CDATA section");
        for (std::size_t i = pos_; i < end; ++i) {  // line ends normalised here too
          if (s_[i] == '\r') {
            e.text += '\n';
            if (i + 1 < end && s_[i + 1] == '\n') ++i;
          } else {
            e.text += s_[i];
          }
        }
        pos_ = end + 3;
      } else if (starts("<?")) {
        skip_past("?>", "processing instruction");
      } else if (starts("<!")) {
        error("declarations are not allowed inside elements");
      } else {
        e.children.emplace_back();
        read_element(e.children.back(), depth + 1, root);
      }
    }
  }

  std::string_view s_;
  std::string_view context_;
  std::size_t pos_ = 0;
};

}  // namespace

XmlElement read_xml_document(std::string_view doc, std::string_view root, std::string_view context) {
  return XmlReader(doc, context).read_document(root);
}

}  // namespace assoc::detail
