#pragma once
// The XML subset of QVD headers: a prolog (declaration, comments, processing instructions),
// one element tree with optional attributes (read and ignored), text with the five
// predefined entities, character references and CDATA. No DTD, so no entity expansion.
#include <string>
#include <string_view>
#include <vector>

namespace assoc::detail {

struct XmlElement {
  std::string name;
  std::string text;
  std::vector<XmlElement> children;

  const XmlElement* child(std::string_view n) const {
    for (const auto& c : children)
      if (c.name == n) return &c;
    return nullptr;
  }
};

// Reads `doc`, whose root element must be named `root`. Throws Error starting with `context`
// (what the document is, for the message) naming the byte where it is malformed.
XmlElement read_xml_document(std::string_view doc, std::string_view root, std::string_view context);

}  // namespace assoc::detail
