"""A throwaway PostgreSQL cluster for the test session.

``start_postgres()`` runs ``initdb`` in a fresh temporary directory (trust auth, listening only on
127.0.0.1 on a free port, socket in the same directory), starts the server with ``pg_ctl`` and
creates a database. ``initdb`` refuses to run as root, so when the tests run as root the server
runs as the ``postgres`` OS user via ``runuser``. ``ICEFLOE_TEST_POSTGRES_URI`` points the tests at
an existing server instead. ``ICEFLOE_PG_BIN`` names the directory holding ``initdb``/``pg_ctl``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ENV_URI = "ICEFLOE_TEST_POSTGRES_URI"
ENV_BIN = "ICEFLOE_PG_BIN"
ENV_REQUIRE = "ICEFLOE_REQUIRE_POSTGRES"
DATABASE = "icefloe_test"
OS_USER = "postgres"


class PostgresUnavailable(RuntimeError):
    """PostgreSQL binaries are missing and could not be installed, or the server did not start."""


@dataclass
class PostgresServer:
    """A running PostgreSQL server the tests may use."""

    host: str
    port: int
    database: str
    data_dir: Path | None = None
    bin_dir: Path | None = None
    run_as: str | None = None
    external_uri: str | None = None

    @property
    def uri(self) -> str:
        """SQLAlchemy URI (psycopg 3 driver) of the test database."""
        if self.external_uri:
            return self.external_uri
        return f"postgresql+psycopg://postgres@{self.host}:{self.port}/{self.database}"

    def stop(self) -> None:
        """Stop the server and delete its directory (no-op for an external server)."""
        if self.data_dir is None or self.bin_dir is None:
            return
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            _run(
                [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate", "-w", "stop"],
                self.run_as,
                timeout=60,
            )
        shutil.rmtree(self.data_dir.parent, ignore_errors=True)


def _candidate_bin_dirs() -> list[Path]:
    found: list[Path] = []
    if os.environ.get(ENV_BIN):
        found.append(Path(os.environ[ENV_BIN]))
    # Debian/Ubuntu layout, newest first, 15 preferred when present.
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    versions.sort(key=lambda p: 0 if "/15/" in p else 1)
    found.extend(Path(p) for p in versions)
    for tool in ("pg_ctl", "initdb"):
        which = shutil.which(tool)
        if which:
            found.append(Path(os.path.realpath(which)).parent)
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            found.append(Path(out.stdout.strip()))
    return found


def _version_key(path: str) -> float:
    try:
        return float(path.split("/")[-2])
    except ValueError:
        return 0.0


def find_bin_dir() -> Path | None:
    """A directory holding initdb, pg_ctl and postgres, or None."""
    for candidate in _candidate_bin_dirs():
        if all(
            (candidate / tool).is_file() and os.access(candidate / tool, os.X_OK)
            for tool in ("initdb", "pg_ctl", "postgres")
        ):
            return candidate
    return None


def _install_postgres() -> None:
    """Install Debian's PostgreSQL server packages (root only)."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise PostgresUnavailable("PostgreSQL binaries not found and cannot apt-get install them (not root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "postgresql"]
    result = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:  # stale package lists: refresh once and retry
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, text=True, timeout=900)
        result = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise PostgresUnavailable(f"apt-get install postgresql failed: {result.stderr[-2000:]}")


def ensure_bin_dir() -> Path:
    """The PostgreSQL binary directory, installing the packages first when possible."""
    found = find_bin_dir()
    if found is None:
        _install_postgres()
        found = find_bin_dir()
    if found is None:
        raise PostgresUnavailable("PostgreSQL binaries not found even after installing 'postgresql'")
    return found


def _run(args: list[str], run_as: str | None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    if run_as is not None:
        args = ["runuser", "-u", run_as, "--", *args]
    # A neutral working directory the server user can enter (the caller's may be private).
    result = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd="/")
    if result.returncode != 0:
        raise PostgresUnavailable(
            f"{' '.join(args)} failed ({result.returncode}):\n"
            f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        )
    return result


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _create_database(host: str, port: int, database: str) -> None:
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(
                host=host, port=port, user="postgres", dbname="postgres", autocommit=True, connect_timeout=5
            ) as conn:
                conn.execute(f'CREATE DATABASE "{database}"')
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def start_postgres(database: str = DATABASE) -> PostgresServer:
    """Start a throwaway cluster (or use ``ICEFLOE_TEST_POSTGRES_URI``) and return it."""
    external = os.environ.get(ENV_URI)
    if external:
        return PostgresServer(host="", port=0, database=database, external_uri=external)
    bin_dir = ensure_bin_dir()
    run_as: str | None = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(OS_USER)
        except KeyError:
            raise PostgresUnavailable(
                f"running as root but there is no {OS_USER!r} OS user for initdb"
            ) from None
        run_as = OS_USER
    base = Path(tempfile.mkdtemp(prefix="icefloe-pg-"))
    data_dir = base / "data"
    try:
        if run_as is not None:
            entry = pwd.getpwnam(run_as)
            os.chown(base, entry.pw_uid, entry.pw_gid)
        os.chmod(base, 0o700)
        _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data_dir),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
                "--no-instructions",
            ],
            run_as,
        )
        last_error: Exception | None = None
        for _ in range(3):
            port = _free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
            )
            try:
                _run(
                    [
                        str(bin_dir / "pg_ctl"),
                        "-D",
                        str(data_dir),
                        "-l",
                        str(base / "server.log"),
                        "-o",
                        options,
                        "-w",
                        "-t",
                        "60",
                        "start",
                    ],
                    run_as,
                )
            except PostgresUnavailable as exc:  # port taken between probe and start: try another
                last_error = exc
                continue
            server = PostgresServer("127.0.0.1", port, database, data_dir, bin_dir, run_as)
            try:
                _create_database(server.host, port, database)
            except Exception:
                server.stop()
                raise
            return server
        log = (
            (base / "server.log").read_text(errors="replace")[-3000:]
            if (base / "server.log").exists()
            else ""
        )
        raise PostgresUnavailable(f"PostgreSQL did not start: {last_error}\n{log}")
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise


def postgres_required() -> bool:
    """Whether a missing PostgreSQL must fail the run instead of skipping (CI)."""
    return bool(os.environ.get(ENV_REQUIRE) or os.environ.get("CI"))
