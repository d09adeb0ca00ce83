"""Doc methods on expressions: Evaluate, EvaluateEx, ExpandExpression, CheckExpression."""

from __future__ import annotations

from typing import Any

import assoc
from assoc.expansion import value_text
from assoc.server.qix.expressions import check, evaluate, field_value
from assoc.server.qix.handles import DocTarget
from assoc.server.qix.methods import Answer, MethodTable
from assoc.server.qix.rpc import CALC_INVALID_DEF, RpcError
from assoc.server.qix.session_state import SessionState

EXPRESSION_DOC_METHODS = MethodTable("Doc")


@EXPRESSION_DOC_METHODS.method("Evaluate")
def evaluate_method(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """The expression's value as text (NULL: "-"), computed under the session's selections."""
    value = evaluate(target.doc.selections, args["qExpression"])
    return Answer({"qReturn": "-" if value is None else value_text(value)})


@EXPRESSION_DOC_METHODS.method("EvaluateEx")
def evaluate_ex(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """The expression's value as FieldValue {qText, qIsNumeric, qNumber}."""
    return Answer({"qValue": field_value(evaluate(target.doc.selections, args["qExpression"]))})


@EXPRESSION_DOC_METHODS.method("ExpandExpression")
def expand_expression(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """The expression with its `$(…)` expanded."""
    expression = args["qExpression"]
    try:
        expanded = target.doc.selections.expand(expression)
    except assoc.Error as exc:
        raise RpcError(CALC_INVALID_DEF, expression, str(exc)) from None
    return Answer({"qExpandedExpression": expanded})


@EXPRESSION_DOC_METHODS.method("CheckExpression", defaults={"qLabels": [""]})
def check_expression(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """qErrorMsg ("" when the expression computes), qBadFieldNames (NxRange of each unknown
    field), qDangerousFieldNames (none)."""
    message, bad = check(target.doc.selections, args["qExpr"])
    return Answer({"qErrorMsg": message, "qBadFieldNames": bad, "qDangerousFieldNames": []})
