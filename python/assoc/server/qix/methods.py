"""How QIX methods are declared: in-parameters, the function that runs them, what they answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from assoc.server.qix.rpc import Param
from assoc.server.qix.schema import schema
from assoc.server.qix.session_state import SessionState


@dataclass
class Answer:
    """A method's result keyed by out-parameter names, and what it changed or closed."""

    result: dict[str, Any]
    selections_changed: bool = False
    change: Sequence[int] = ()
    close: Sequence[int] = ()


Runner = Callable[[SessionState, Any, dict[str, Any]], Answer]


@dataclass(frozen=True)
class Method:
    """One method of one object type; `engine` methods run off the event loop. A method that
    `keeps_layouts` reads the session without changing anything a layout shows: it is answered
    beside layouts being made ahead (ahead.py) instead of stopping them."""

    name: str
    params: tuple[Param, ...]
    run: Runner
    engine: bool = True
    keeps_layouts: bool = False


class MethodTable(dict[str, Method]):
    """The methods of one object type, by name."""

    def __init__(self, qix_type: str) -> None:
        super().__init__()
        self.qix_type = qix_type

    @classmethod
    def union(cls, qix_type: str, *tables: MethodTable) -> MethodTable:
        """One type's methods declared in several modules (a name declared twice is a bug)."""
        merged = cls(qix_type)
        for table in tables:
            if table.qix_type != qix_type or merged.keys() & table.keys():
                raise ValueError(f"{qix_type}: tables of another type or methods declared twice")
            merged.update(table)
        return merged

    def method(
        self,
        name: str,
        *,
        engine: bool = True,
        keeps_layouts: bool = False,
        optional: Sequence[str] = (),
        kinds: Mapping[str, str] | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> Callable[[Runner], Runner]:
        """Declares the decorated function as method `name` of this type, its parameters the
        schema's: names, order, defaults and which may be left out. `optional` names
        parameters the schema requires that clients may leave out all the same (the default
        then applies); `kinds` and `defaults` correct what a schema example cannot say (a
        number whose example is 0; the engine's default where the schema shows none)."""
        kinds, defaults = kinds or {}, defaults or {}
        declared = schema()[self.qix_type][name].params
        unknown = (set(optional) | set(kinds) | set(defaults)) - {p.name for p in declared}
        if unknown:
            raise ValueError(f"{self.qix_type}.{name} has no parameter {sorted(unknown)[0]}")
        params = tuple(
            replace(
                param,
                kind=kinds.get(param.name, param.kind),
                default=defaults.get(param.name, param.default),
                required=param.required and param.name not in optional,
            )
            for param in declared
        )

        def register(run: Runner) -> Runner:
            self[name] = Method(name, params, run, engine, keeps_layouts)
            return run

        return register
