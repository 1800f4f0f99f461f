"""A real PostgreSQL server for the label-store tests, started from this machine's binaries.

``PostgresServer`` runs ``initdb`` into a fresh temporary folder and ``pg_ctl start`` on a free
port on 127.0.0.1 (its unix socket in that folder too), creates a password-protected role
``ana`` and a database ``labels`` it owns, and stops and deletes everything at the end. The
binaries come from PATH or ``/usr/lib/postgresql/*/bin``; when there are none, the tests that
need the server are skipped with that reason — and fail where ``CI`` or
``MAEV_REQUIRE_POSTGRES`` is set (``.ci/run`` installs them, so CI never skips).
PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` user.

``benchmarks/bench_label_store.py`` loads this file too (for :class:`PostgresServer`).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

ROLE = "ana"
#: The role's password: a test asserts that it never shows (reprs, errors, logs, labels).
PASSWORD = "pw-Zq8!never-shown"
DATABASE = "labels"


def find_pg_bin() -> tuple[Path | None, str]:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, or (None, why not)."""
    candidates: list[Path] = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(os.path.realpath(on_path)).parent)
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                                           key=lambda p: int(p.split("/")[-2])
                                           if p.split("/")[-2].isdigit() else 0,
                                           reverse=True)]
    for d in candidates:
        if all((d / b).is_file() for b in ("initdb", "pg_ctl", "postgres")):
            return d, ""
    return None, ("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in "
                  "/usr/lib/postgresql/*/bin: install PostgreSQL (`apt-get install postgresql`; "
                  ".ci/run does)")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One throw-away PostgreSQL cluster: ``start()``, ``url``, ``restart()``, ``stop()``."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="maev-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._prefix: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root and there is no `postgres` user to run "
                                   "the server as") from None
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self._prefix = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}",
                            "--init-groups", "--"]
        self.password = PASSWORD
        self.url = f"postgresql://{ROLE}:{PASSWORD}@127.0.0.1:{self.port}/{DATABASE}"
        self.redacted_url = f"postgresql://{ROLE}:***@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *args: str, timeout: float = 120) -> str:
        proc = subprocess.run([*self._prefix, *args], capture_output=True, text=True,
                              timeout=timeout, cwd=self.root)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({proc.returncode}): "
                               f"{proc.stderr.strip()[-2000:]}\n{log}")
        return proc.stdout

    def _bin(self, name: str) -> str:
        return str(self.bindir / name)

    def start(self) -> PostgresServer:
        self._run(self._bin("initdb"), "-D", str(self.data), "-U", "postgres", "-E", "UTF8",
                  "--auth-local=trust", "--auth-host=scram-sha-256", "--no-instructions")
        with open(self.data / "postgresql.conf", "a") as f:
            f.write(f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                    f"unix_socket_directories = '{self.root}'\nmax_connections = 60\n"
                    "shared_buffers = 32MB\nfsync = on\nsynchronous_commit = on\n"
                    "log_connections = on\n")
        self._pg_ctl("start")
        self.psql(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
        self.psql(f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
        return self

    def _pg_ctl(self, action: str, *extra: str) -> None:
        self._run(self._bin("pg_ctl"), action, "-D", str(self.data), "-l", str(self.log),
                  "-w", "-t", "60", *extra)

    def psql(self, sql: str, db: str = "postgres") -> str:
        """Run SQL as the superuser over the unix socket (no password)."""
        psql = self._bin("psql") if (self.bindir / "psql").is_file() else "psql"
        return self._run(psql, "-h", str(self.root), "-p", str(self.port), "-U", "postgres",
                         "-d", db, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql)

    def create_database(self, name: str) -> str:
        """A new empty database owned by ``ana``; returns its URL (with the password)."""
        self.psql(f"CREATE DATABASE {name} OWNER {ROLE}")
        return f"postgresql://{ROLE}:{PASSWORD}@127.0.0.1:{self.port}/{name}"

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every connection is cut, the server comes back."""
        self._pg_ctl("restart", "-m", "fast")

    def server_log(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._pg_ctl("stop", "-m", "immediate")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server():
    """A running PostgreSQL server for this test session (skipped only without binaries)."""
    bindir, why = find_pg_bin()
    if bindir is None:
        if os.environ.get("CI") or os.environ.get("MAEV_REQUIRE_POSTGRES"):
            pytest.fail(f"{why} (CI / MAEV_REQUIRE_POSTGRES: the PostgreSQL tests must run)")
        pytest.skip(why)
    server = PostgresServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


_db_counter = [0]


@pytest.fixture
def pg_url(pg_server):
    """The URL of a fresh, empty database on the session's server (password included)."""
    _db_counter[0] += 1
    return pg_server.create_database(f"labels_t{os.getpid()}_{_db_counter[0]}")
