"""Several machines starting at the same moment (``STARMALL_ROLES``, starmall/roles.py): the
one-time preparation (migrate, demo data, logins, slots, almanac) runs under a PostgreSQL
advisory lock, so two ``manage.py runshop`` on an empty database both come up and the shop is
prepared exactly once. Without the lock, two concurrent first migrations collide (duplicate
tables) and demo rows may be written twice."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from django.db import connection
from fault_helpers import BASE_DIR

from apps.backoffice.roles import DEMO_LOGINS
from starmall import supervision
from starmall.roles import DEFAULT_ROLES, roles_from_environ


def test_roles_default_to_the_whole_shop_and_refuse_unknown_names():
    assert roles_from_environ({}) == {"web", "worker", "beat", "sandbox"} == set(DEFAULT_ROLES.split(","))
    assert roles_from_environ({"STARMALL_ROLES": " web, Worker "}) == {"web", "worker"}
    with pytest.raises(ValueError, match="unknown role wbe"):
        roles_from_environ({"STARMALL_ROLES": "wbe,worker"})
    with pytest.raises(ValueError, match="names no role"):
        roles_from_environ({"STARMALL_ROLES": " , "})


def test_the_programs_supervised_are_those_of_the_roles_and_workers_get_unique_names(tmp_path):
    def names(roles):
        return [p.name for p in supervision.shop_programs(queues=["q"], beat_schedule=tmp_path / "s", roles=roles)]

    assert names({"web", "worker"}) == ["web", "worker"]
    assert names({"beat"}) == ["beat"]
    programs = supervision.shop_programs(
        queues=["q"], beat_schedule=tmp_path / "s", roles={"worker"}, worker_name="worker123@%h"
    )
    assert programs[0].command[-2:] == ["-n", "worker123@%h"]
    # supervisord would expand %(...)s: the %h reaches Celery as it is.
    assert "-n worker123@%%h" in supervision.render_config(programs, run_dir=tmp_path, directory=tmp_path)


def _sandbox_address(settings, **bases):
    from starmall.management.commands.runshop import sandbox_address

    for name in ("WECHAT_API_BASE", "WECHAT_PAY_API_BASE", "LOGISTICS_API_BASE"):
        setattr(settings, name, bases.get(name, "https://api.weixin.qq.com/"))
    return sandbox_address()


def test_the_sandbox_starts_only_where_a_base_points_at_the_sandbox_port_here(settings):
    settings.WECHAT_SANDBOX_PORT = 8101
    assert _sandbox_address(settings, WECHAT_PAY_API_BASE="http://127.0.0.1:8101/") == ("127.0.0.1", 8101)
    assert _sandbox_address(settings, WECHAT_PAY_API_BASE="http://127.0.0.1:8001/") is None  # another port
    assert _sandbox_address(settings, WECHAT_PAY_API_BASE="http://10.0.0.5:8101/") is None  # another machine's


@pytest.mark.postgres
@pytest.mark.timeout(600)
def test_two_machines_starting_at_once_prepare_the_shop_once(tmp_path, db):
    s = connection.settings_dict
    name = f"starmall_startup_{uuid.uuid4().hex[:10]}"
    admin = psycopg.connect(
        host=s["HOST"] or "127.0.0.1",
        port=s["PORT"] or 5432,
        user=s["USER"],
        password=s["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    )
    admin.execute(f'CREATE DATABASE "{name}"')
    url = f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{name}"
    processes = []
    try:
        for n in (1, 2):
            var = tmp_path / f"machine{n}"
            var.mkdir()
            env = {
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "starmall.settings.local",
                "DATABASE_URL": url,
                "STARMALL_VAR_DIR": str(var),
                "CACHE_KEY_PREFIX": name,
                "STARMALL_ROLES": "web,worker",
                "PYTHONUNBUFFERED": "1",
            }
            out = open(var / "out.log", "wb")
            processes.append(
                (
                    subprocess.Popen(
                        [sys.executable, "manage.py", "runshop", "--prepare-only"],
                        cwd=BASE_DIR,
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    ),
                    var / "out.log",
                )
            )
        codes = [process.wait(540) for process, _ in processes]
        logs = [Path(log).read_text(errors="replace") for _, log in processes]
        assert codes == [0, 0], "\n----\n".join(log[-3000:] for log in logs)
        assert sum("waited" in log for log in logs) == 1, logs  # the second took its turn
        assert all("roles      web,worker" in log for log in logs)
        with psycopg.connect(url.replace("postgres://", "postgresql://")) as db:

            def one(sql):
                return db.execute(sql).fetchone()[0]

            migrations = one("SELECT count(*) FROM django_migrations")
            assert one("SELECT count(DISTINCT (app, name)) FROM django_migrations") == migrations
            assert one("SELECT count(*) FROM auth_user WHERE username = 'admin'") == 1
            assert one("SELECT count(*) FROM auth_user WHERE is_staff") == 1 + len(DEMO_LOGINS)  # admin + one per role
            assert (
                one("SELECT count(*) FROM catalog_product")
                == one("SELECT count(DISTINCT name) FROM catalog_product")
                > 0
            )
            assert one("SELECT count(*) FROM appointments_slot") > 0
            assert one("SELECT count(*) FROM almanac_almanacday") > 1000  # loaded, once (UNIQUE day)
    finally:
        for process, _ in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
