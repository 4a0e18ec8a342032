"""Property-based fuzzing of the HTTP API from its own OpenAPI schema (schemathesis).

Every generated request, valid or not, must get an answer that is not a server error; the
work limits in web/schemas.py keep generated plan requests small enough to run quickly.
"""
from __future__ import annotations

import os

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402

from gpuplan.web.app import create_app  # noqa: E402

APP = create_app()
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)

# A quick, reproducible pass by default; GPUPLAN_FUZZ_EXAMPLES=200 for a deeper one.
EXAMPLES = int(os.environ.get("GPUPLAN_FUZZ_EXAMPLES", "12"))


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 12,
          suppress_health_check=list(HealthCheck))
def test_no_server_errors(case):
    case.call_and_validate(checks=[not_a_server_error])
