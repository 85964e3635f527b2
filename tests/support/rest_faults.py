"""Fault injection around the real REST server's ASGI app: throttling, lost responses, races.

Each rule matches a method and a path suffix and fires a bounded number of times:

- ``status`` before the app runs (``503``/``429``: throttled; ``500``: the request never landed);
- ``after`` = a status sent *after* the app handled the request (the commit landed, the reply was lost);
- ``before_call``: a callback run before the app handles the request (e.g. a competing commit).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Fault:
    """One rule."""

    method: str
    path_suffix: str
    times: int = 1
    status: int | None = None
    after: int | None = None
    before_call: Callable[[], None] | None = None
    fired: int = 0


@dataclass
class FaultInjector:
    """An ASGI wrapper applying the first matching rule that still has shots left."""

    app: Any = None
    faults: list[Fault] = field(default_factory=list)
    seen: list[tuple[str, str]] = field(default_factory=list)

    def wrap(self, app: Any) -> FaultInjector:
        """Use as ``start_server(config, wrap=injector.wrap)``."""
        self.app = app
        return self

    def add(self, fault: Fault) -> Fault:
        """Register a rule."""
        self.faults.append(fault)
        return fault

    async def _send_status(self, send: Any, status: int) -> None:
        body = json.dumps(
            {"error": {"message": "injected", "type": "ServiceFailure", "code": status}}
        ).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if status in (429, 503):
            headers.append((b"retry-after", b"0"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        self.seen.append((method, path))
        rule = next(
            (
                f
                for f in self.faults
                if f.method == method and path.endswith(f.path_suffix) and f.fired < f.times
            ),
            None,
        )
        if rule is None:
            await self.app(scope, receive, send)
            return
        rule.fired += 1
        if rule.status is not None:
            await self._send_status(send, rule.status)
            return
        if rule.before_call is not None:
            from starlette.concurrency import run_in_threadpool

            await run_in_threadpool(rule.before_call)
        if rule.after is not None:

            async def swallow(message: Any) -> None:
                return None

            await self.app(scope, receive, swallow)
            await self._send_status(send, rule.after)
            return
        await self.app(scope, receive, send)
