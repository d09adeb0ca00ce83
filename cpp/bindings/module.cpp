#include "bindings.hpp"

#include <cstring>

#include "assoc/error.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "assoc engine core (private: use the assoc package)";
  static pybind11::exception<assoc::Error> error(m, "Error", PyExc_ValueError);
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const assoc::Error& e) {
      pybind11::set_error(error, e.what());
    } catch (const assoc::FileError& e) {
      // OSError(errno, strerror, filename) is the subclass its errno calls for (FileExistsError...).
      pybind11::set_error(PyExc_OSError, pybind11::make_tuple(e.error(), std::strerror(e.error()), e.path()));
    }
  });
  assoc::py_bind::bind_values(m);
  assoc::py_bind::bind_functions(m);
  assoc::py_bind::bind_model(m);
  assoc::py_bind::bind_session(m);
  assoc::py_bind::bind_csv(m);
  assoc::py_bind::bind_qvd(m);
  assoc::py_bind::bind_hypercube(m);
  assoc::py_bind::bind_script(m);
  assoc::py_bind::bind_arrow(m);
  assoc::py_bind::bind_delta(m);
}
