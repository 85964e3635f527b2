"""moto's S3, STS and IAM with authentication enforced, in a child process, for credential vending.

The suite's shared moto S3 (``s3server.start_s3_server``) accepts any keys; this one checks
signatures and IAM policies, so a client holding no keys (or keys of the wrong principal) is
refused exactly as AWS would refuse it. Enforcement is process-wide in moto (its request counter
against ``INITIAL_NO_AUTH_ACTION_COUNT``), hence the child process.

The child creates, before it turns authentication on: the bucket; the IAM user whose keys the
catalog server uses (``s3:*`` and ``sts:AssumeRole``); the role the server assumes (``s3:*``, a
trust policy naming that user). It counts AssumeRole requests (a WSGI hook in the request path,
not a mock) and answers ``counts``, ``reset`` and ``stop`` over stdin/stdout like
``start_s3_server_process``.

moto enforces a role's own policies but not the inline session policy of AssumeRole, which is what
scopes vended credentials. The child adds that check as IAM makes it (``_enforce_session_policies``):
a request signed with assumed-role keys must also be allowed by the session policy they were issued
with, ``s3:ListBucket`` judged on its ``prefix`` (IAM's ``StringLike``, which moto lacks, included),
so a PUT outside a vended credential's prefixes is AccessDenied here as on AWS.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.support.s3server import BUCKET, REGION, StdioChild, spawn_child

ROLE_NAME = "icefloe-vending"
USER_NAME = "icefloe-server"
ACCOUNT = "123456789012"


@dataclass
class StsServer(StdioChild):
    """The running child: where it listens and the server user's keys and role."""

    host: str
    port: int
    access_key: str
    secret_key: str
    role_arn: str
    bucket: str = BUCKET
    _process: subprocess.Popen[str] | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def store_properties(self) -> dict[str, str]:
        """How a client reaches the store, without any keys."""
        return {"s3.endpoint": self.endpoint, "s3.region": REGION, "s3.path-style-access": "true"}

    @property
    def server_properties(self) -> dict[str, str]:
        """The catalog server's ``s3.*`` properties: the store and the IAM user's keys."""
        return {
            **self.store_properties,
            "s3.access-key-id": self.access_key,
            "s3.secret-access-key": self.secret_key,
        }

    def assume_role_count(self) -> int:
        """AssumeRole requests served since the last ``reset``."""
        return int(json.loads(self._ask("counts"))["AssumeRole"])

    def reset(self) -> None:
        self._ask("reset")

    def vending_catalog(self, name: str, uri: str, *, assume_role: bool = True, **properties: str) -> Any:
        """A SQL catalog at ``uri`` whose warehouse is a fresh prefix of this store, holding the
        server user's keys and (``assume_role``) vending through the role; ``properties`` added."""
        from icefloe.catalog.sql import SqlCatalog
        from icefloe.server.vending import ROLE_ARN

        warehouse = f"s3://{self.bucket}/wh-{uuid.uuid4().hex[:8]}"
        role = {ROLE_ARN: self.role_arn} if assume_role else {}
        vending = {**self.server_properties, **role, **properties}
        return SqlCatalog(name, uri=uri, warehouse=warehouse, **vending)


def vendor_of(server: Any) -> Any:
    """The running server's ``StsVendor`` (a RunningServer of ``icefloe.server``)."""
    from icefloe.server.vending import StsVendor

    vendor = server.app.state.icefloe.vendor
    assert isinstance(vendor, StsVendor)
    return vendor


def start_sts_server(bucket: str = BUCKET) -> StsServer:
    """Start the child and wait until it serves with authentication on."""
    process, ready = spawn_child("tests.support.sts_server", bucket)
    return StsServer(_process=process, bucket=bucket, **ready)


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _AssumeRoleCounter:
    """WSGI middleware counting STS AssumeRole requests (form-encoded POSTs)."""

    def __init__(self, inner: WsgiApp) -> None:
        self.inner = inner
        self.count = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ["REQUEST_METHOD"] == "POST" and "form-urlencoded" in environ.get("CONTENT_TYPE", ""):
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            if b"Action=AssumeRole" in body:
                self.count += 1
        return self.inner(environ, start_response)


def _policy(statement: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def _string_like(expected: list[str] | str, actual: list[str] | str) -> bool:
    """IAM's ``StringLike``: a pattern matches the whole value, ``*`` any run, ``?`` one character."""
    patterns = [expected] if isinstance(expected, str) else expected
    values = [actual] if isinstance(actual, str) else actual
    wildcards = [re.escape(p).replace(r"\*", ".*").replace(r"\?", ".") for p in patterns]
    return any(re.fullmatch(w, value, re.DOTALL) for w in wildcards for value in values)


def _enforce_session_policies() -> None:
    """Make moto refuse what an assumed role's session policy does not allow (IAM intersects it
    with the role's policies; moto checks only the latter)."""
    from urllib.parse import parse_qs, urlsplit

    from moto.iam import policy_conditions
    from moto.iam.access_control import AssumedRoleAccessKey, IAMPolicy, IAMRequestBase, PermissionResult
    from moto.sts.models import sts_backends

    policy_conditions.CONDITION_OPERATIONS["StringLike"] = _string_like
    role_checks = IAMRequestBase.check_action_permitted

    def check_action_permitted(self: Any, resource: str) -> None:
        role_checks(self, resource)
        key = self._access_key
        if not isinstance(key, AssumedRoleAccessKey):
            return
        session = sts_backends[key.account_id][key.partition].get_assumed_role_from_access_key(
            key._access_key_id
        )
        if session is None or not session.policy:
            return
        action = "s3:ListBucket" if self._action == "s3:HeadBucket" else self._action  # as IAM names it
        query = parse_qs(urlsplit(self._path).query)
        listing = action == "s3:ListBucket" and "prefix" in query
        conditions = {"s3:prefix": query["prefix"][0]} if listing else None
        verdict = IAMPolicy(session.policy).is_action_permitted(action, resource, None, conditions)
        if verdict != PermissionResult.PERMITTED:
            self._raise_access_denied()

    IAMRequestBase.check_action_permitted = check_action_permitted  # type: ignore[method-assign]


def _serve(bucket: str) -> None:
    import logging
    import threading

    import boto3
    from moto import settings
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    settings.INITIAL_NO_AUTH_ACTION_COUNT = float("inf")  # set-up first, unauthenticated
    app = _AssumeRoleCounter(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    setup = {
        "endpoint_url": endpoint,
        "region_name": REGION,
        "aws_access_key_id": "setup",
        "aws_secret_access_key": "setup",
    }
    boto3.client("s3", **setup).create_bucket(Bucket=bucket)
    iam = boto3.client("iam", **setup)
    iam.create_user(UserName=USER_NAME)
    everything = {"Effect": "Allow", "Action": ["s3:*", "sts:AssumeRole"], "Resource": "*"}
    iam.put_user_policy(UserName=USER_NAME, PolicyName="server", PolicyDocument=_policy(everything))
    keys = iam.create_access_key(UserName=USER_NAME)["AccessKey"]
    trust = {
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:user/{USER_NAME}"},
        "Action": "sts:AssumeRole",
    }
    role = iam.create_role(RoleName=ROLE_NAME, AssumeRolePolicyDocument=_policy(trust))["Role"]
    storage = {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}
    iam.put_role_policy(RoleName=ROLE_NAME, PolicyName="storage", PolicyDocument=_policy(storage))
    _enforce_session_policies()
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0  # from now on every request is authenticated
    app.count = 0
    ready = {
        "host": "127.0.0.1",
        "port": server.server_address[1],
        "access_key": keys["AccessKeyId"],
        "secret_key": keys["SecretAccessKey"],
        "role_arn": role["Arn"],
    }
    print(json.dumps(ready), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "counts":
            print(json.dumps({"AssumeRole": app.count}), flush=True)
        elif command == "reset":
            app.count = 0
            print("{}", flush=True)
        elif command == "stop":
            break
    server.shutdown()
    server.server_close()
    print("{}", flush=True)


if __name__ == "__main__":
    _serve(sys.argv[1] if len(sys.argv) > 1 else BUCKET)
