"""schemathesis against the service's own /openapi.json (a bounded run): no request gets a
server error, and every answer matches the schema the service publishes (status, content type,
headers, body). Whether a schema-valid body is a valid app file is not the schema's to say: a
PNG posted as an import gets its 415, which the checks below do not count against it.

The cases come from each operation's hypothesis strategy, driven by hypothesis itself: the
schemathesis pytest plugin reaches into pytest internals that pytest 9.2 removed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.specs.openapi.schemas import OpenApiSchema

from appfiles import ServerProcess, needs_qvd_reader, package_bytes

pytestmark = needs_qvd_reader

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenApiSchema]:
    """The schema of a running service that holds one app (so app routes find something)."""
    server = ServerProcess(tmp_path_factory.mktemp("openapi") / "data", "EFEMode=1").start()
    with server.client() as client:
        assert client.post("/v1/apps/import", content=package_bytes()).status_code == 200
    yield schemathesis.openapi.from_url(server.base_url + "/openapi.json")
    assert server.stopped_gracefully()


def test_no_server_errors_and_answers_match_the_schema(api_schema: OpenApiSchema) -> None:
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 10, "the published schema lost its operations"
    for operation in operations:

        @settings(
            max_examples=25,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        @given(case=operation.as_strategy())
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(timeout=30, checks=CHECKS)

        check()
