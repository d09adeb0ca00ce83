// Delta answers' walk over Python values (python/assoc/server/qix/delta.py holds the rules and
// the bases kept per socket): a snapshot of the value a socket was sent, the JSON-Patch
// operations that turn a snapshot into the new value, and the kinds enigma.js keeps.
//
// A snapshot is the value with its dicts, lists and tuples copied (as dicts and lists), so that
// changes of the live value in place cannot reach it; strings, numbers, bools, None and RawJson
// texts are shared (none of them changes). Two values are equal as JSON is: true is not 1, 1 is
// 1.0, a RawJson equals a RawJson of the same text. Every layout a client asks with
// `"delta": true` goes through here, under the GIL.
#include <Python.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bindings.hpp"

namespace assoc::py_bind {
namespace {

py::object steal(PyObject* p) {
  if (p == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(p);
}

py::object borrow(PyObject* p) { return py::reinterpret_borrow<py::object>(p); }

// A change that no patch carries to what the client keeps: the answer goes in full.
struct NotExpressible {};

// Recursion through the C stack, bounded by the interpreter's own limit (RecursionError).
class Depth {
 public:
  Depth() {
    if (Py_EnterRecursiveCall(" in a delta answer") != 0) throw py::error_already_set();
  }
  ~Depth() { Py_LeaveRecursiveCall(); }
  Depth(const Depth&) = delete;
  Depth& operator=(const Depth&) = delete;
};

PyObject* interned(const char* text) {
  PyObject* out = PyUnicode_InternFromString(text);
  if (out == nullptr) throw py::error_already_set();
  return out;
}

// The operations' member names and kinds, made once (kept for the life of the process).
struct Words {
  PyObject* op = interned("op");
  PyObject* path = interned("path");
  PyObject* value = interned("value");
  PyObject* add = interned("add");
  PyObject* replace = interned("replace");
  PyObject* remove = interned("remove");
  PyObject* text = interned("text");
  PyObject* items = interned("items");
};

const Words& words() {
  static const Words* made = new Words();
  return *made;
}

bool is_number(PyObject* v) { return (PyLong_Check(v) && !PyBool_Check(v)) || PyFloat_Check(v); }

bool is_sequence(PyObject* v) { return PyList_CheckExact(v) || PyTuple_CheckExact(v); }

Py_ssize_t length_of(PyObject* seq) { return PyList_CheckExact(seq) ? PyList_GET_SIZE(seq) : PyTuple_GET_SIZE(seq); }

PyObject* item_of(PyObject* seq, Py_ssize_t i) {  // borrowed
  return PyList_CheckExact(seq) ? PyList_GET_ITEM(seq, i) : PyTuple_GET_ITEM(seq, i);
}

// What JavaScript's Number() reads as a number besides digits when a name starts with it.
bool numberish_start(Py_UCS4 c) {
  switch (c) {
    case '+': case '-': case '.': case ' ': case '\t': case '\n': case '\r': case '\v': case '\f':
    case 0xfeff: case 0xa0:
      return true;
    default:
      return c >= '0' && c <= '9';
  }
}

class JsonDelta {
 public:
  explicit JsonDelta(py::object raw_type) : raw_type_(std::move(raw_type)) {
    if (!PyType_Check(raw_type_.ptr())) throw Error("JsonDelta: RawJson must be a class");
  }

  // The snapshot of a live value and its approximate JSON size.
  py::tuple snapshot(const py::handle& value) const {
    py::object snap = snap_of(value.ptr());
    return py::make_tuple(snap, size_of(snap.ptr()));
  }

  // (operations, snapshot of the new value, its size) turning snapshot `old` into live `now`,
  // or None when the whole value cannot be set over what the client keeps.
  py::object diff(const py::handle& old, const py::handle& now) const {
    std::vector<py::object> ops;
    py::object snap;
    try {
      snap = equal(old.ptr(), now.ptr()) ? borrow(old.ptr()) : diff_at(old.ptr(), now.ptr(), "", false, ops);
    } catch (const NotExpressible&) {
      return py::none();
    }
    py::list out(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) out[i] = std::move(ops[i]);
    return py::make_tuple(out, snap, size_of(snap.ptr()));
  }

  // The kind enigma.js keeps for a value or snapshot: 'object', 'object_' (with members it keeps
  // when the object is replaced), 'array' or 'value'.
  const char* kind(PyObject* v) const {
    if (PyDict_Check(v)) return special(v) ? "object_" : "object";
    if (PyList_Check(v) || PyTuple_Check(v)) return "array";
    if (Py_TYPE(v) == raw_type()) {
      py::object text = steal(PyObject_GetAttr(v, words().text));
      if (PyUnicode_Check(text.ptr()) && PyUnicode_GET_LENGTH(text.ptr()) > 0) {
        const Py_UCS4 first = PyUnicode_READ_CHAR(text.ptr(), 0);
        if (first == '[') return "array";
        if (first == '{') return "object_";
      }
    }
    return "value";
  }

  // Whether enigma.js can set a whole value to `now` over one of kind `held` (null: it holds
  // nothing).
  bool root_fits(const char* held, PyObject* now) const {
    if (now == Py_None) return false;
    const std::string_view k = kind(now);
    if (k == "value" || held == nullptr) return true;
    const std::string_view h = held;
    return h != "object_" && h == (k == "object_" ? "object" : k);
  }

 private:
  py::object raw_type_;

  PyTypeObject* raw_type() const { return reinterpret_cast<PyTypeObject*>(raw_type_.ptr()); }
  bool is_raw(PyObject* v) const { return Py_TYPE(v) == raw_type(); }

  static bool special(PyObject* dict) {
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
      if (!PyUnicode_Check(key) || PyUnicode_GET_LENGTH(key) == 0) continue;
      const Py_UCS4 first = PyUnicode_READ_CHAR(key, 0);
      if (first == '_') return true;
      if (first == '$' && PyUnicode_GET_LENGTH(key) > 1 && PyUnicode_READ_CHAR(key, 1) == '$') return true;
    }
    return false;
  }

  // A member name as a path segment enigma.js reads as that member (its UTF-8 in `out`).
  static bool safe_name(PyObject* key, std::string& out) {
    if (!PyUnicode_CheckExact(key)) return false;
    const Py_ssize_t n = PyUnicode_GET_LENGTH(key);
    if (n == 0) return false;
    const Py_UCS4 first = PyUnicode_READ_CHAR(key, 0);
    if (numberish_start(first) || Py_UNICODE_ISSPACE(first)) return false;
    if (PyUnicode_FindChar(key, '/', 0, n, 1) != -1 || PyUnicode_FindChar(key, '~', 0, n, 1) != -1) return false;
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(key, &size);
    if (utf8 == nullptr) {  // a lone surrogate: not a name a path can carry
      PyErr_Clear();
      return false;
    }
    out.assign(utf8, static_cast<std::size_t>(size));
    return out != "Infinity" && out != "__proto__" && out != "constructor" && out != "prototype";
  }

  static Py_ssize_t name_size(PyObject* key) {
    if (PyUnicode_Check(key)) return PyUnicode_GET_LENGTH(key) + 4;
    py::object text = steal(PyObject_Str(key));
    return PyUnicode_GET_LENGTH(text.ptr()) + 4;
  }

  Py_ssize_t size_of(PyObject* v) const {
    if (PyUnicode_Check(v)) return PyUnicode_GET_LENGTH(v) + 2;
    if (PyBool_Check(v)) return 5;
    if (is_number(v)) return 8;
    if (PyDict_CheckExact(v)) {
      Depth depth;
      Py_ssize_t size = 2, pos = 0;
      PyObject *key, *value;
      while (PyDict_Next(v, &pos, &key, &value)) size += name_size(key) + size_of(value);
      return size;
    }
    if (is_sequence(v)) {
      Depth depth;
      Py_ssize_t size = 2;
      for (Py_ssize_t i = 0, n = length_of(v); i < n; ++i) size += size_of(item_of(v, i)) + 1;
      return size;
    }
    if (is_raw(v)) {
      py::object text = steal(PyObject_GetAttr(v, words().text));
      return PyUnicode_Check(text.ptr()) ? PyUnicode_GET_LENGTH(text.ptr()) : 4;
    }
    return 4;
  }

  py::object snap_of(PyObject* v) const {
    if (PyDict_CheckExact(v)) {
      Depth depth;
      py::object out = steal(PyDict_New());
      Py_ssize_t pos = 0;
      PyObject *key, *value;
      while (PyDict_Next(v, &pos, &key, &value)) {
        py::object item = snap_of(value);
        if (PyDict_SetItem(out.ptr(), key, item.ptr()) != 0) throw py::error_already_set();
      }
      return out;
    }
    if (is_sequence(v)) {
      Depth depth;
      const Py_ssize_t n = length_of(v);
      py::object out = steal(PyList_New(n));
      for (Py_ssize_t i = 0; i < n; ++i) PyList_SET_ITEM(out.ptr(), i, snap_of(item_of(v, i)).release().ptr());
      return out;
    }
    return borrow(v);
  }

  // Snapshot `a` against live `b`, as JSON values.
  bool equal(PyObject* a, PyObject* b) const {
    if (a == b) return true;
    if (PyUnicode_Check(a)) {
      if (!PyUnicode_Check(b)) return false;
      const int same = PyUnicode_Compare(a, b);
      if (same == -1 && PyErr_Occurred()) throw py::error_already_set();
      return same == 0;
    }
    if (PyBool_Check(a) || PyBool_Check(b) || a == Py_None || b == Py_None) return false;  // not identical
    if (is_number(a)) {
      if (!is_number(b)) return false;
      const int same = PyObject_RichCompareBool(a, b, Py_EQ);
      if (same < 0) throw py::error_already_set();
      return same == 1;
    }
    if (PyDict_CheckExact(a)) {
      if (!PyDict_CheckExact(b) || PyDict_GET_SIZE(a) != PyDict_GET_SIZE(b)) return false;
      Depth depth;
      Py_ssize_t pos = 0;
      PyObject *key, *value;
      while (PyDict_Next(a, &pos, &key, &value)) {
        PyObject* other = PyDict_GetItemWithError(b, key);
        if (other == nullptr) {
          if (PyErr_Occurred()) throw py::error_already_set();
          return false;
        }
        if (!equal(value, other)) return false;
      }
      return true;
    }
    if (PyList_CheckExact(a)) {
      if (!is_sequence(b) || length_of(b) != PyList_GET_SIZE(a)) return false;
      Depth depth;
      for (Py_ssize_t i = 0, n = PyList_GET_SIZE(a); i < n; ++i)
        if (!equal(PyList_GET_ITEM(a, i), item_of(b, i))) return false;
      return true;
    }
    if (is_raw(a)) {
      if (!is_raw(b)) return false;
      py::object ta = steal(PyObject_GetAttr(a, words().text));
      py::object tb = steal(PyObject_GetAttr(b, words().text));
      const int same = PyObject_RichCompareBool(ta.ptr(), tb.ptr(), Py_EQ);
      if (same < 0) throw py::error_already_set();
      return same == 1;
    }
    if (PyDict_CheckExact(b) || is_sequence(b) || is_raw(b) || PyUnicode_Check(b) || is_number(b)) return false;
    const int same = PyObject_RichCompareBool(a, b, Py_EQ);  // anything else: as Python compares
    if (same < 0) throw py::error_already_set();
    return same == 1;
  }

  // {"op": name, "path": path, "value": value} (no value when null).
  static py::object op(PyObject* name, const std::string& path, PyObject* value) {
    const Words& w = words();
    py::object out = steal(PyDict_New());
    py::object text = steal(PyUnicode_DecodeUTF8(path.data(), static_cast<Py_ssize_t>(path.size()), "strict"));
    if (PyDict_SetItem(out.ptr(), w.op, name) != 0 || PyDict_SetItem(out.ptr(), w.path, text.ptr()) != 0 ||
        (value != nullptr && PyDict_SetItem(out.ptr(), w.value, value) != 0))
      throw py::error_already_set();
    return out;
  }

  // Operations that set `path` (an item of an array when `in_list`; the whole value when empty)
  // from snapshot `old` to `now` whole; the snapshot of `now`.
  py::object replace(PyObject* old, PyObject* now, const std::string& path, bool in_list,
                     std::vector<py::object>& ops) const {
    if (path.empty()) {
      if (!root_fits(kind(old), now)) throw NotExpressible{};
      ops.push_back(op(words().replace, "/", now));
    } else if (!in_list && PyDict_CheckExact(old) && PyDict_CheckExact(now) && special(old)) {
      ops.push_back(op(words().remove, path, nullptr));  // enigma.js would keep its `_…` members
      ops.push_back(op(words().add, path, now));
    } else {
      ops.push_back(op(words().replace, path, now));
    }
    return snap_of(now);
  }

  // `old` and `now` are known to differ (their caller compared them).
  py::object diff_at(PyObject* old, PyObject* now, const std::string& path, bool in_list,
                     std::vector<py::object>& ops) const {
    if (PyDict_CheckExact(now) && PyDict_CheckExact(old)) return object(old, now, path, in_list, ops);
    if (is_sequence(now) && PyList_CheckExact(old)) return array(old, now, path, in_list, ops);
    if (is_raw(now) && is_raw(old)) {
      py::object was = steal(PyObject_GetAttr(old, words().items));
      py::object rows = steal(PyObject_GetAttr(now, words().items));
      if (!was.is_none() && !rows.is_none()) return matrix(old, now, was, rows, path, in_list, ops);
    }
    return replace(old, now, path, in_list, ops);
  }

  py::object object(PyObject* old, PyObject* now, const std::string& path, bool in_list,
                    std::vector<py::object>& ops) const {
    Depth depth;
    std::vector<py::object> sub;
    py::object snap = steal(PyDict_New());
    Py_ssize_t same = 0, present = 0, pos = 0;
    PyObject *key, *value;
    std::string name;
    while (PyDict_Next(now, &pos, &key, &value)) {
      PyObject* was = PyDict_GetItemWithError(old, key);
      if (was == nullptr && PyErr_Occurred()) throw py::error_already_set();
      py::object item;
      if (was != nullptr) {
        ++present;
        if (equal(was, value)) {
          item = borrow(was);
          ++same;
        } else if (safe_name(key, name)) {
          item = diff_at(was, value, path + "/" + name, false, sub);
        } else {  // not on a path: a change replaces this object
          return replace(old, now, path, in_list, ops);
        }
      } else if (safe_name(key, name)) {
        sub.push_back(op(words().add, path + "/" + name, value));
        item = snap_of(value);
      } else {
        return replace(old, now, path, in_list, ops);
      }
      if (PyDict_SetItem(snap.ptr(), key, item.ptr()) != 0) throw py::error_already_set();
    }
    if (present < PyDict_GET_SIZE(old)) {
      pos = 0;
      while (PyDict_Next(old, &pos, &key, &value)) {
        const int kept = PyDict_Contains(now, key);
        if (kept < 0) throw py::error_already_set();
        if (kept) continue;
        if (!safe_name(key, name)) return replace(old, now, path, in_list, ops);
        sub.push_back(op(words().remove, path + "/" + name, nullptr));
      }
    }
    if (same == 0 && PyDict_GET_SIZE(now) > 1 && (!path.empty() || !special(old)))
      return replace(old, now, path, in_list, ops);  // nothing stays: one operation
    for (auto& o : sub) ops.push_back(std::move(o));
    return snap;
  }

  py::object array(PyObject* old, PyObject* now, const std::string& path, bool in_list,
                   std::vector<py::object>& ops) const {
    Depth depth;
    const Py_ssize_t n_old = PyList_GET_SIZE(old), n_new = length_of(now);
    const Py_ssize_t common = std::min(n_old, n_new), longest = std::max(n_old, n_new);
    std::vector<Py_ssize_t> changed;
    for (Py_ssize_t i = 0; i < common; ++i)
      if (!equal(PyList_GET_ITEM(old, i), item_of(now, i))) changed.push_back(i);
    bool objects = n_old == n_new;  // objects changed in place: each by its members
    for (const Py_ssize_t i : changed)
      objects = objects && PyDict_CheckExact(PyList_GET_ITEM(old, i)) && PyDict_CheckExact(item_of(now, i));
    if (!objects && 2 * (common - static_cast<Py_ssize_t>(changed.size())) < longest)
      return replace(old, now, path, in_list, ops);  // fewer than half stay
    py::object snap = steal(PyList_GetSlice(old, 0, common));
    for (const Py_ssize_t i : changed) {
      py::object item = diff_at(PyList_GET_ITEM(old, i), item_of(now, i), path + "/" + std::to_string(i), true, ops);
      if (PyList_SetItem(snap.ptr(), i, item.release().ptr()) != 0) throw py::error_already_set();
    }
    for (Py_ssize_t i = n_old - 1; i >= common; --i) ops.push_back(op(words().remove, path + "/" + std::to_string(i), nullptr));
    for (Py_ssize_t i = common; i < n_new; ++i) {
      ops.push_back(op(words().add, path + "/" + std::to_string(i), item_of(now, i)));
      py::object item = snap_of(item_of(now, i));
      if (PyList_Append(snap.ptr(), item.ptr()) != 0) throw py::error_already_set();
    }
    return snap;
  }

  // A matrix's text by row (`was` and `rows` its rows' texts): the rows that changed, or whole.
  py::object matrix(PyObject* old, PyObject* now, const py::object& was_items, const py::object& rows_items,
                    const std::string& path, bool in_list, std::vector<py::object>& ops) const {
    py::object was = steal(PySequence_Fast(was_items.ptr(), "a matrix's rows must be a sequence"));
    py::object rows = steal(PySequence_Fast(rows_items.ptr(), "a matrix's rows must be a sequence"));
    const Py_ssize_t n_was = PySequence_Fast_GET_SIZE(was.ptr()), n_rows = PySequence_Fast_GET_SIZE(rows.ptr());
    const Py_ssize_t common = std::min(n_was, n_rows);
    std::vector<Py_ssize_t> changed;
    for (Py_ssize_t i = 0; i < common; ++i) {
      const int same = PyObject_RichCompareBool(PySequence_Fast_GET_ITEM(was.ptr(), i),
                                                PySequence_Fast_GET_ITEM(rows.ptr(), i), Py_EQ);
      if (same < 0) throw py::error_already_set();
      if (!same) changed.push_back(i);
    }
    if (2 * (common - static_cast<Py_ssize_t>(changed.size())) < std::max(n_was, n_rows))
      return replace(old, now, path, in_list, ops);
    const auto row = [&](Py_ssize_t i) {
      return steal(PyObject_CallOneArg(raw_type_.ptr(), PySequence_Fast_GET_ITEM(rows.ptr(), i)));
    };
    for (const Py_ssize_t i : changed) ops.push_back(op(words().replace, path + "/" + std::to_string(i), row(i).ptr()));
    for (Py_ssize_t i = n_was - 1; i >= common; --i) ops.push_back(op(words().remove, path + "/" + std::to_string(i), nullptr));
    for (Py_ssize_t i = common; i < n_rows; ++i) ops.push_back(op(words().add, path + "/" + std::to_string(i), row(i).ptr()));
    return borrow(now);
  }
};

}  // namespace

void bind_delta(py::module_& m) {
  py::class_<JsonDelta>(m, "JsonDelta",
                        "Snapshots and JSON-Patch operations of delta answers (assoc.server.qix.delta).")
      .def(py::init<py::object>(), py::arg("raw_type"))
      .def("snapshot", &JsonDelta::snapshot, py::arg("value"),
           "(snapshot, approximate JSON size) of a value: its dicts, lists and tuples copied.")
      .def("diff", &JsonDelta::diff, py::arg("old"), py::arg("new"),
           "(operations, snapshot, size) turning snapshot `old` into `new`; None when the whole value "
           "cannot be set over what the client keeps.")
      .def(
          "kind", [](const JsonDelta& self, const py::handle& v) { return self.kind(v.ptr()); }, py::arg("value"),
          "The kind enigma.js keeps: 'object', 'object_' (members `_…`/`$$…` it keeps), 'array' or 'value'.")
      .def(
          "root_fits",
          [](const JsonDelta& self, const std::optional<std::string>& held, const py::handle& now) {
            return self.root_fits(held ? held->c_str() : nullptr, now.ptr());
          },
          py::arg("held"), py::arg("new"),
          "Whether enigma.js can set a whole value to `new` over one of kind `held` (None: nothing kept).");
}

}  // namespace assoc::py_bind
