"""Fuzz every operation of the server's own OpenAPI schema: whatever comes in, the answer
is never a 5xx (schemathesis generates the requests; the real server answers them)."""

from __future__ import annotations

import httpx
import schemathesis
from conftest import LiveServer
from hypothesis import HealthCheck, given, settings

EXAMPLES_PER_OPERATION = 25


def test_no_input_makes_a_server_error(live_server: LiveServer) -> None:
    spec = httpx.get(f"{live_server.url}/openapi.json").json()
    schema = schemathesis.openapi.from_dict(spec)
    schema.config.update(base_url=live_server.url)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/tts", "/v1/audio/speech", "/v1/roles/{role}", "/v1/script"}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))  # fmt: skip
        def call(case) -> None:  # type: ignore[no-untyped-def]
            response = case.call(timeout=60)
            assert response.status_code < 500, (case.method, case.formatted_path, response.text[:300])

        call()
