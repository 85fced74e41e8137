"""One error body for every 4xx and 5xx, in OpenAI's shape:
`{"error": {"message", "type", "param", "code"}}`, and the handlers that produce it."""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from engine.core.errors import CastError, QueueFull, ScriptError, TroupeError
from engine.export import ExportError
from engine.server.roles import TooManyRoles

log = logging.getLogger("troupe.server")

TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
         413: "invalid_request_error", 429: "rate_limit_error", 503: "server_overloaded"}  # fmt: skip
"""OpenAI's `type` for a status; any other 4xx is an `invalid_request_error`."""


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorBody(BaseModel):
    """What every error answer carries (the schema lists it for each status)."""

    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text}
    for status, text in ((400, "Bad request (validation included)"), (401, "Missing or wrong bearer token"),
                         (404, "Unknown role, model or path"), (413, "Request body too large"),
                         (421, "Host not allowed"), (429, "Too many roles added by clients"),
                         (503, "Overloaded: retry after Retry-After seconds"))
}  # fmt: skip


class ClientGone(Exception):
    """The client hung up while its speech was being made."""


class BadField(TroupeError):
    """A request field whose value parses but cannot be honoured: a 400 naming the field."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


class UnknownModel(TroupeError):
    """A `model` this server does not have: 404 `model_not_found` on `model`, as OpenAI."""


class BodyTooLarge(HTTPException):
    """A request body (chunked or not) grew past the limit. An `HTTPException`, so that
    FastAPI's body reader passes it on instead of calling it a parse error."""

    def __init__(self, limit_bytes: int) -> None:
        super().__init__(413, f"request body over {limit_bytes} bytes")


def error(status: int, message: str, param: str | None = None, code: str | None = None) -> JSONResponse:
    kind = TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return JSONResponse(body, status_code=status)


def _validation(exc: RequestValidationError) -> JSONResponse:
    """Pydantic's complaints as one 400, naming the first bad field. The offending value is
    never echoed: it may be NaN, a lone surrogate or megabytes long."""
    problems = []
    param = None
    if any(e.get("type") == "json_invalid" for e in exc.errors()):  # as OpenAI: no param
        return error(400, "could not parse the JSON body of the request (expected a JSON object)")
    for e in exc.errors():
        loc = [str(p) for p in e.get("loc", ()) if p not in ("body", "query", "path")]
        if e.get("type") == "missing" and len(loc) == 1:
            return error(400, f"you must provide a {loc[0]} parameter", param=loc[0],
                         code="missing_required_parameter")  # fmt: skip
        where = ".".join(loc[:1] if loc and loc[0] == "voice" else loc) or "body"
        param = param or where
        problems.append(f"{where}: {e.get('msg', 'invalid')}")
    message = "; ".join(problems[:5]) or "invalid request"
    return error(400, _printable(message), param=_printable(param or ""), code="invalid_value")


def _printable(text: str) -> str:
    """`text` safe for a JSON body: lone surrogates escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def install(app: FastAPI) -> None:
    """Register the handlers that turn every known failure into one error body."""

    @app.exception_handler(ClientGone)
    async def client_gone(_r: Request, _exc: ClientGone) -> Response:
        return Response(status_code=499)  # nobody reads it: the connection is closed

    @app.exception_handler(RequestValidationError)
    async def invalid(_r: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation(exc)

    @app.exception_handler(HTTPException)
    async def http_error(_r: Request, exc: HTTPException) -> JSONResponse:
        response = error(exc.status_code, _printable(str(exc.detail)))
        for k, v in (exc.headers or {}).items():
            response.headers[k] = v
        return response

    @app.exception_handler(TooManyRoles)
    async def too_many_roles(_r: Request, exc: TooManyRoles) -> JSONResponse:
        response = error(429, str(exc), code="too_many_roles")
        response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after_s)))
        return response

    @app.exception_handler(UnknownModel)
    async def unknown_model(_r: Request, exc: UnknownModel) -> JSONResponse:
        return error(404, _printable(str(exc)), "model", "model_not_found")

    @app.exception_handler(Exception)
    async def bug(_r: Request, exc: Exception) -> JSONResponse:
        log.exception("a request failed unexpectedly")  # NB: Starlette still logs and re-raises it
        return error(500, f"internal error ({type(exc).__name__}); the server goes on")

    @app.exception_handler(CastError)
    async def cast_error(_r: Request, exc: CastError) -> JSONResponse:
        unknown = "unknown role" in str(exc)
        code = "role_not_found" if unknown else "invalid_value" if "unknown voice" in str(exc) else None
        return error(404 if unknown else 400, _printable(str(exc)), "voice", code)

    @app.exception_handler(ScriptError)
    async def script_error(_r: Request, exc: ScriptError) -> JSONResponse:
        return error(400, _printable(str(exc)), "path")

    @app.exception_handler(ExportError)
    async def export_error(_r: Request, exc: ExportError) -> JSONResponse:
        return error(400, _printable(str(exc)), "response_format")

    @app.exception_handler(BadField)
    async def bad_field(_r: Request, exc: BadField) -> JSONResponse:
        return error(400, _printable(str(exc)), exc.param, "invalid_value")

    @app.exception_handler(QueueFull)
    async def queue_full(_r: Request, exc: QueueFull) -> JSONResponse:
        response = error(503, str(exc), code="overloaded")
        response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after_s)))
        return response

    @app.exception_handler(TroupeError)
    async def troupe_error(_r: Request, exc: TroupeError) -> JSONResponse:
        failed = "failed" in str(exc)
        return error(502 if failed else 400, _printable(str(exc)))
