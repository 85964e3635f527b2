"""The test S3 server counts requests by operation and injects the faults it is asked for."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow.fs as pafs
import pytest

from tests.support.s3server import S3Server, s3_operation, start_s3_server_process


def _fs(server: S3Server, retries: int) -> pafs.S3FileSystem:
    props = server.properties
    return pafs.S3FileSystem(
        access_key=props["s3.access-key-id"],
        secret_key=props["s3.secret-access-key"],
        region=props["s3.region"],
        endpoint_override=f"{server.host}:{server.port}",
        scheme="http",
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=retries + 1),
        allow_delayed_open=True,
    )


def test_operations_are_classified_from_method_and_path() -> None:
    assert s3_operation("GET", "/bucket", "list-type=2&prefix=a/") == "LIST"
    assert s3_operation("GET", "/bucket/", "") == "LIST"
    assert s3_operation("GET", "/bucket/a/b", "") == "GET"
    assert s3_operation("put", "/bucket/a/b", "") == "PUT"
    assert s3_operation("HEAD", "/bucket/a/b", "") == "HEAD"
    assert s3_operation("DELETE", "/bucket/a/b", "") == "DELETE"


def test_requests_are_counted_per_operation(s3: S3Server) -> None:
    fs = _fs(s3, retries=0)
    with fs.open_output_stream(f"{s3.bucket}/count/x.bin") as out:
        out.write(b"abc")
    with fs.open_input_file(f"{s3.bucket}/count/x.bin") as inp:
        assert inp.read() == b"abc"
    assert s3.counts() == {"PUT": 1, "HEAD": 1, "GET": 1}


def test_injected_503_fails_puts_until_retries_run_out(s3: S3Server) -> None:
    fs = _fs(s3, retries=1)
    s3.fail_next_puts(1)
    with fs.open_output_stream(f"{s3.bucket}/fault/retried.bin") as out:
        out.write(b"1")
    assert s3.counts() == {"PUT": 2}

    s3.reset_counts()
    s3.fail_next_puts(2)
    with (
        pytest.raises(OSError, match="SLOW_DOWN"),
        fs.open_output_stream(f"{s3.bucket}/fault/lost.bin") as out,
    ):
        out.write(b"2")
    assert s3.counts() == {"PUT": 2}
    assert fs.get_file_info(f"{s3.bucket}/fault/lost.bin").type == pafs.FileType.NotFound


def test_slow_responses_still_complete(s3: S3Server) -> None:
    fs = _fs(s3, retries=0)
    s3.slow_next(2, 0.2)
    with fs.open_output_stream(f"{s3.bucket}/slow/x.bin") as out:
        out.write(b"slow")
    with fs.open_input_file(f"{s3.bucket}/slow/x.bin") as inp:
        assert inp.read() == b"slow"


def test_a_server_in_a_child_process_counts_its_requests() -> None:
    server = start_s3_server_process("icefloe-child")
    try:
        fs = _fs(server, retries=0)
        with fs.open_output_stream(f"{server.bucket}/child/x.bin") as out:
            out.write(b"abc")
        assert server.counts() == {"PUT": 1}
        server.reset_counts()
        with fs.open_input_file(f"{server.bucket}/child/x.bin") as inp:
            assert inp.read() == b"abc"
        assert server.counts() == {"HEAD": 1, "GET": 1}
    finally:
        server.stop()


def test_puts_in_flight_together_are_gathered(s3: S3Server) -> None:
    fs = _fs(s3, retries=0)
    s3.gather_next_puts(2)

    def put(name: str) -> None:
        with fs.open_output_stream(f"{s3.bucket}/gather/{name}") as out:
            out.write(name.encode())

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(put, ["a", "b"]))
    assert s3.gathered_puts() == 2
    assert s3.counts() == {"PUT": 2}
