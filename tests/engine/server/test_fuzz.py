"""Fuzz every operation of the server's own OpenAPI schema: whatever comes in, the answer
is never a 5xx, and its status, content type, headers and body are the ones the schema
declares (schemathesis generates the requests and checks the answers; the real server
answers them). Left out: 'schema-valid data is accepted', since a well-formed request can
still name a voice or role that does not exist (a 400 or 404, as OpenAI answers it)."""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from live_server import LiveServer
from schemathesis.specs.openapi.checks import positive_data_acceptance

from engine.synthesis import lexicon

EXAMPLES_PER_OPERATION = 25


@pytest.mark.slow
def test_no_input_makes_a_server_error(live_server: LiveServer) -> None:
    spec = httpx.get(f"{live_server.url}/openapi.json").json()
    schema = schemathesis.openapi.from_dict(spec)
    schema.config.update(base_url=live_server.url)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/tts", "/v1/audio/speech", "/v1/roles/{role}", "/v1/script",
                                              "/v1/models", "/v1/models/{model_id}"}  # fmt: skip
    try:
        _fuzz(operations)
    finally:
        lexicon.use_project_lexicon(lexicon.Lexicon())  # random words must not respell later tests


def _fuzz(operations) -> None:  # type: ignore[no-untyped-def]
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))  # fmt: skip
        def call(case) -> None:  # type: ignore[no-untyped-def]
            response = case.call_and_validate(timeout=60, excluded_checks=[positive_data_acceptance])
            assert response.status_code < 500, (case.method, case.formatted_path, response.text[:300])

        call()
