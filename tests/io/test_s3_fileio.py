"""FileIO on a real S3-compatible server: Iceberg ``s3.*`` configuration, request costs, retries."""

from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from icefloe.errors import AlreadyExists, NotFound, ValidationError
from icefloe.io.fileio import FileIO, s3_options
from tests.support.s3server import ACCESS_KEY, SECRET_KEY, S3Server


def test_write_read_list_delete(s3: S3Server, s3_warehouse: str) -> None:
    io = FileIO(s3.properties)
    loc = f"{s3_warehouse}/t/data/a.bin"
    io.new_output(loc).write_bytes(b"hello")
    assert io.new_input(loc).read() == b"hello"
    assert io.new_input(loc).length == 5
    assert io.exists(loc) and not io.exists(loc + ".missing")
    with pytest.raises(AlreadyExists):
        io.new_output(loc).write_bytes(b"again")
    io.new_output(loc).write_bytes(b"replaced", overwrite=True)
    assert io.new_input(loc).read() == b"replaced"
    io.new_output(f"{s3_warehouse}/t/data/b.bin").write_bytes(b"b")
    assert io.list_prefix(f"{s3_warehouse}/t") == [loc, f"{s3_warehouse}/t/data/b.bin"]
    listed = io.list_files(f"{s3_warehouse}/t")
    assert [f.size for f in listed] == [8, 1]
    assert all(f.modified_ms is not None for f in listed)
    io.delete(loc)
    with pytest.raises(NotFound):
        io.delete(loc)
    io.delete(loc, missing_ok=True)
    with pytest.raises(NotFound):
        io.new_input(loc).read()
    assert io.list_prefix(f"{s3_warehouse}/t") == [f"{s3_warehouse}/t/data/b.bin"]
    assert io.list_prefix(f"{s3_warehouse}/nothing-here") == []


def test_s3a_and_s3n_name_the_same_objects(s3: S3Server, s3_warehouse: str) -> None:
    io = FileIO(s3.properties)
    io.new_output(f"{s3_warehouse}/x.bin").write_bytes(b"x")
    rest = s3_warehouse.removeprefix("s3://")
    assert io.new_input(f"s3a://{rest}/x.bin").read() == b"x"
    assert io.new_input(f"s3n://{rest}/x.bin").read() == b"x"


def test_request_costs_of_small_writes_reads_and_deletes(s3: S3Server, s3_warehouse: str) -> None:
    io = FileIO(s3.properties)
    loc = f"{s3_warehouse}/cost/a.bin"
    io.new_output(loc).write_bytes(b"x" * 1000)
    assert s3.counts() == {"HEAD": 1, "PUT": 1}  # existence check, one PutObject (no multipart)
    s3.reset_counts()
    io.new_output(f"{s3_warehouse}/cost/b.bin").write_bytes(b"y", overwrite=True)
    assert s3.counts() == {"PUT": 1}
    s3.reset_counts()
    assert io.new_input(loc).read() == b"x" * 1000
    assert s3.counts() == {"HEAD": 1, "GET": 1}
    s3.reset_counts()
    io.delete_many([loc])
    assert s3.counts().get("DELETE") == 1
    assert s3.counts().get("LIST", 0) == 0


def test_a_fresh_name_is_written_without_an_existence_check(s3: S3Server, s3_warehouse: str) -> None:
    io = FileIO(s3.properties)
    loc = f"{s3_warehouse}/fresh/0c5e2b8e-3f6d-4c8e-9a57-1d2f3e4a5b6c.bin"
    s3.reset_counts()
    io.new_output(loc, fresh_name=True).write_bytes(b"fresh")
    assert s3.counts() == {"PUT": 1}
    assert io.new_input(loc).read() == b"fresh"
    # a name that is not fresh keeps its check and is refused when taken
    with pytest.raises(AlreadyExists):
        io.new_output(loc).write_bytes(b"again")
    assert io.new_input(loc).read() == b"fresh"


def test_environment_credentials(s3: S3Server, s3_warehouse: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    io = FileIO({"s3.endpoint": s3.endpoint, "s3.region": "us-east-1", "s3.path-style-access": "true"})
    io.new_output(f"{s3_warehouse}/env.bin").write_bytes(b"env")
    assert io.new_input(f"{s3_warehouse}/env.bin").read() == b"env"


def test_session_token_and_path_style_are_passed_on() -> None:
    opts = s3_options(
        {
            "s3.endpoint": "https://store.example:9443/",
            "s3.access-key-id": "k",
            "s3.secret-access-key": "s",
            "s3.session-token": "token",
            "s3.path-style-access": "false",
            "s3.retry.num-retries": "2",
        }
    )
    assert opts["session_token"] == "token"
    assert opts["force_virtual_addressing"] is True
    assert opts["endpoint_override"] == "store.example:9443"
    assert opts["scheme"] == "https"
    assert isinstance(opts["retry_strategy"], pafs.AwsStandardS3RetryStrategy)
    with pytest.raises(ValidationError):
        s3_options({"s3.retry.num-retries": "-1"})


def test_throttled_writes_retry_then_fail_cleanly(s3: S3Server, s3_warehouse: str) -> None:
    io = FileIO({**s3.properties, "s3.retry.num-retries": "2"})
    s3.fail_next_puts(2)
    io.new_output(f"{s3_warehouse}/r/ok.bin").write_bytes(b"ok")
    assert io.new_input(f"{s3_warehouse}/r/ok.bin").read() == b"ok"
    assert s3.counts()["PUT"] == 3

    s3.fail_next_puts(3)
    with pytest.raises(OSError, match="SLOW_DOWN"):
        io.new_output(f"{s3_warehouse}/r/lost.bin").write_bytes(b"lost")
    assert not io.exists(f"{s3_warehouse}/r/lost.bin")


def test_slow_answers_do_not_break_reads(s3: S3Server, s3_warehouse: str) -> None:
    io = FileIO(s3.properties)
    io.new_output(f"{s3_warehouse}/slow.bin").write_bytes(b"slow")
    s3.slow_next(2, 0.3)
    assert io.new_input(f"{s3_warehouse}/slow.bin").read() == b"slow"


def test_secrets_are_not_in_the_file_io_repr(s3: S3Server, s3_warehouse: str) -> None:
    io = FileIO({**s3.properties, "s3.session-token": "session-secret"})
    io.new_output(f"{s3_warehouse}/repr.bin").write_bytes(b"r")
    text = repr(io)
    assert SECRET_KEY not in text and "session-secret" not in text
