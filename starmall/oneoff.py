"""What ``manage.py`` makes sure of around a one-off command (``reconcile``, ``shell``, ...).

- a command that needs the shop's database (all but :data:`SETUP_COMMANDS` and :data:`TOOL_COMMANDS`) is
  refused with one line (:data:`NOT_READY`, Chinese and English) and exit status 1 while that database is
  absent (no SQLite file: nothing is created), not migrated, or has migrations not applied;
- the embedded Redis (no ``REDIS_URL``) a command starts is its child, stopped when the command ends, however
  it ends (``starmall.embedded_redis.start_owned``); one that already answers (``make run``'s) is left running;
- a tool that opened a SQLite file that did not exist (``showmigrations``, ``makemigrations``) does not
  leave the empty file behind.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

#: Commands that create or migrate the database themselves.
SETUP_COMMANDS = frozenset({"migrate", "runshop"})
#: Commands that need neither a migrated database nor Redis (development and deploy tools).
TOOL_COMMANDS = frozenset(
    {
        "help",
        "version",
        "check",
        "makemigrations",
        "showmigrations",
        "sqlmigrate",
        "squashmigrations",
        "optimizemigration",
        "collectstatic",
        "findstatic",
        "compilemessages",
        "makemessages",
        "diffsettings",
        "startapp",
        "startproject",
        "spectacular",
        "sendtestemail",
        "test",
    }
)
NOT_READY = (
    "Starmall: 数据库尚未就绪，请先运行 make run（或 manage.py migrate），或把 DATABASE_URL / STARMALL_VAR_DIR "
    "设为正在运行的商店所用的值。The database is not ready ({reason}): run `make run` (or `manage.py migrate`) "
    "first, or set DATABASE_URL / STARMALL_VAR_DIR to the running shop's."
)


def command_name(argv: list[str]) -> str:
    """The subcommand of ``manage.py`` argv; ``"help"`` for none, ``-h``/``--help``/``--version``."""
    if len(argv) < 2 or argv[1].startswith("-") or any(a in ("-h", "--help", "--version") for a in argv[2:]):
        return "help"
    return argv[1]


def database_problem(alias: str = "default") -> str | None:
    """Why the database ``alias`` is not ready for the shop's commands (English, for
    :data:`NOT_READY`), or None when every migration is applied.

    A SQLite file that does not exist is reported without being opened (opening creates it), one
    that was never migrated without being written to. A
    database that cannot be reached is not this function's business: None, and the command
    reports its own connection error.
    """
    from django.db import DatabaseError, connections
    from django.db.migrations.executor import MigrationExecutor

    connection = connections[alias]
    if connection.vendor == "sqlite" and not connection.is_in_memory_db():
        name = Path(connection.settings_dict["NAME"])
        if not name.exists():
            return f"no database file {name}"
        if not _has_migrations_table(name):  # read-only: Django's connection would switch it to WAL
            return "no tables: never migrated"
    try:
        executor = MigrationExecutor(connection)
        if not executor.recorder.has_table():
            return "no tables: never migrated"
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError:
        return None
    finally:
        connection.close()
    if plan:
        return f"{len(plan)} migrations not applied, e.g. {plan[0][0].app_label}.{plan[0][0].name}"
    return None


def refusal(argv: list[str]) -> str | None:
    """The one line to exit with instead of running ``argv``, or None to run it. Needs Django set up."""
    command = command_name(argv)
    if command in SETUP_COMMANDS or command in TOOL_COMMANDS:
        return None
    reason = database_problem()
    return NOT_READY.format(reason=reason) if reason else None


@contextlib.contextmanager
def no_new_empty_sqlite(alias: str = "default"):
    """Around a command: a SQLite file of ``alias`` that did not exist before and holds no
    migrated schema afterwards (a tool opened it) is removed, with its -wal/-shm/-journal."""
    from django.db import connections

    connection = connections[alias]
    path = None
    if connection.vendor == "sqlite" and not connection.is_in_memory_db():
        path = Path(connection.settings_dict["NAME"])
        if path.exists():
            path = None
    try:
        yield
    finally:
        if path is not None and path.exists():
            connection.close()
            if not _has_migrations_table(path):
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)


def _has_migrations_table(path: Path) -> bool:
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'django_migrations'").fetchone() is not None
    except sqlite3.Error:
        return True  # unreadable: not ours to delete


def run(argv: list[str]) -> None:
    """``manage.py``'s body: set Django up, refuse (exit 1 with :data:`NOT_READY`) or run the
    command, with the embedded Redis started for it — and stopped after it — when ``REDIS_URL``
    is not set and the command may need one (not for help and tools)."""
    import django
    from django.conf import settings
    from django.core.management import execute_from_command_line

    from starmall import embedded_redis

    django.setup()
    message = refusal(argv)
    if message:
        sys.exit(message)
    command = command_name(argv)
    redis = embedded_redis.start_owned() if settings.EMBEDDED_REDIS and command not in TOOL_COMMANDS else None
    try:
        with no_new_empty_sqlite() if command not in SETUP_COMMANDS else contextlib.nullcontext():
            execute_from_command_line(argv)
    finally:
        embedded_redis.stop_owned(redis)
