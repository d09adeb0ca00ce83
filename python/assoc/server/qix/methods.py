"""How QIX methods are declared: in-parameters, the function that runs them, what they answer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assoc.server.qix.rpc import Param

if TYPE_CHECKING:
    from assoc.server.qix.session import QixSession


@dataclass
class Answer:
    """A method's result keyed by out-parameter names, and what it changed or closed."""

    result: dict[str, Any]
    selections_changed: bool = False
    change: Sequence[int] = ()
    close: Sequence[int] = ()


Runner = Callable[["QixSession", Any, dict[str, Any]], Answer]


@dataclass(frozen=True)
class Method:
    """One method of one object type; `engine` methods run off the event loop."""

    name: str
    params: tuple[Param, ...]
    run: Runner
    engine: bool = True


class MethodTable(dict[str, Method]):
    """The methods of one object type, by name."""

    def method(self, name: str, *params: Param, engine: bool = True) -> Callable[[Runner], Runner]:
        """Declares the decorated function as method `name` with `params`."""

        def register(run: Runner) -> Runner:
            self[name] = Method(name, params, run, engine)
            return run

        return register
