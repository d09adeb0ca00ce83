"""One QIX session: its handles, its open document, and how a request becomes an answer."""

from __future__ import annotations

import logging
from dataclasses import replace

import assoc
from assoc.server.qix.cube_api import CUBE_METHODS
from assoc.server.qix.delta import DeltaBases, NotExpressible
from assoc.server.qix.doc_api import DOC_METHODS
from assoc.server.qix.expression_api import EXPRESSION_DOC_METHODS
from assoc.server.qix.field_api import FIELD_METHODS
from assoc.server.qix.global_api import GLOBAL_METHODS
from assoc.server.qix.handles import Target
from assoc.server.qix.library_api import (
    BOOKMARK_METHODS,
    DIMENSION_METHODS,
    LIBRARY_DOC_METHODS,
    MEASURE_METHODS,
    VARIABLE_METHODS,
)
from assoc.server.qix.methods import Answer, Method, MethodTable
from assoc.server.qix.object_api import OBJECT_METHODS
from assoc.server.qix.persist import PERSIST_DOC_METHODS
from assoc.server.qix.rpc import (
    INVALID_PARAMETERS,
    METHOD_NOT_FOUND,
    NOT_IMPLEMENTED,
    Request,
    RpcError,
    bind_params,
    error_message,
    result_message,
)
from assoc.server.qix.schema import schema
from assoc.server.qix.script_api import SCRIPT_DOC_METHODS, SCRIPT_GLOBAL_METHODS
from assoc.server.qix.session_state import SessionState

INTERNAL_ERROR = -32603
METHODS: dict[str, MethodTable] = {
    "Global": MethodTable.union("Global", GLOBAL_METHODS, SCRIPT_GLOBAL_METHODS),
    "Doc": MethodTable.union(
        "Doc",
        DOC_METHODS,
        SCRIPT_DOC_METHODS,
        LIBRARY_DOC_METHODS,
        PERSIST_DOC_METHODS,
        EXPRESSION_DOC_METHODS,
    ),
    "Field": FIELD_METHODS,
    "GenericObject": MethodTable.union("GenericObject", OBJECT_METHODS, CUBE_METHODS),
    "GenericDimension": DIMENSION_METHODS,
    "GenericMeasure": MEASURE_METHODS,
    "GenericVariable": VARIABLE_METHODS,
    "GenericBookmark": BOOKMARK_METHODS,
}
_log = logging.getLogger("assoc.qix")


class QixSession(SessionState):
    """A session that answers requests: the method tables dispatch on its handles."""

    def resolve(self, request: Request) -> tuple[Target, Method]:
        """The target and method a request names (-32602 unknown handle, -32601 / 20 method)."""
        target = self.handles.get(request.handle)
        method = METHODS[target.qix_type].get(request.method)
        if method is None:
            if request.method in schema()[target.qix_type]:
                raise RpcError(NOT_IMPLEMENTED, request.method, "Not implemented")
            raise RpcError(METHOD_NOT_FOUND, request.method, "Method not found")
        return target, method

    @staticmethod
    def method_of(target: Target, name: str) -> Method:
        """One of the methods of a target's type (KeyError when it has none of that name)."""
        return METHODS[target.qix_type][name]

    def answer(
        self, request: Request, target: Target, method: Method, bases: DeltaBases | None = None
    ) -> str:
        """Runs a resolved request; its answer (or error) as a JSON text: a delta answer when
        the request asks for one and `bases` holds what its socket received before."""
        outcome = self.outcome(request, target, method)
        if isinstance(outcome, str):
            return outcome
        return self.message(request, method, outcome, bases)

    def beside(
        self, request: Request, target: Target, method: Method, bases: DeltaBases | None = None
    ) -> str:
        """`answer` for a method that reads or stops a reload in progress (GetProgress,
        CancelReload, CancelRequest) while another thread runs it: nothing of the document is
        touched (no bookmark states synced) and nothing is noted for other sockets."""
        try:
            args = bind_params(method.name, method.params, request.params)
            answer = method.run(self, target, args)
        except RpcError as exc:
            return error_message(request.id, exc)
        return self.message(request, method, answer, bases)

    def outcome(self, request: Request, target: Target, method: Method) -> Answer | str:
        """Runs a resolved request: its Answer, or its error answer's JSON text."""
        try:
            args = bind_params(method.name, method.params, request.params)
            if self.doc is not None:
                self.doc.sync_bookmark_states()  # {BM01} in this request's expressions
            answer = method.run(self, target, args)
        except RpcError as exc:
            return error_message(request.id, exc)
        except assoc.Error as exc:
            return error_message(request.id, RpcError(INVALID_PARAMETERS, method.name, str(exc)))
        except Exception:
            _log.exception("QIX %s failed", method.name)
            return error_message(
                request.id, RpcError(INTERNAL_ERROR, method.name, "Internal error")
            )
        if answer.selections_changed and self.doc is not None:
            answer = replace(answer, change=self.handles.open_handles())
        if answer.change or answer.close:
            self.notice = (list(answer.change), list(answer.close))
        return answer

    def message(
        self, request: Request, method: Method, answer: Answer, bases: DeltaBases | None
    ) -> str:
        """An Answer's JSON text: as JSON-Patch operations against the socket's `bases` when
        the request asks for a delta (their values then become the new bases; in full when a
        value cannot be patched). The bases of handles the answer closes are forgotten first,
        as enigma.js drops what it keeps for them before it applies the answer."""
        try:
            if bases is not None:
                bases.forget(answer.close)
                if request.delta:
                    try:
                        prepared = bases.prepare(request.handle, method.name, answer.result)
                    except NotExpressible:
                        pass
                    else:
                        change, close = answer.change, answer.close
                        text = result_message(request.id, prepared.result, change, close, True)
                        bases.commit(prepared)
                        return text
            return result_message(request.id, answer.result, answer.change, answer.close)
        except ValueError:  # a number JSON cannot carry: answered, never a dropped socket
            _log.exception("QIX %s made an answer JSON cannot carry", method.name)
            return error_message(
                request.id, RpcError(INTERNAL_ERROR, method.name, "Internal error")
            )
