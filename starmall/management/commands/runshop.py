"""``manage.py runshop``: the whole shop on one machine (what ``make run`` does).

Prepares the database (migrate, demo data once, staff login, slots, almanac window), then runs
every process under honcho — web (gunicorn), Celery worker, Celery beat and, unless WeChat is
configured elsewhere, the local WeChat sandbox — and stops all of them (and the embedded Redis)
on Ctrl-C.
"""

from __future__ import annotations

import os
import sys

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from honcho.manager import Manager
from honcho.printer import Printer

from starmall import embedded_redis


class Command(BaseCommand):
    help = "Prepare the database and run web, worker, beat and the WeChat sandbox until Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default=os.environ.get("WEB_BIND", "127.0.0.1:8000"))
        parser.add_argument("--prepare-only", action="store_true", help="prepare, then exit")

    def handle(self, *args, bind: str, prepare_only: bool, **options):
        self._prepare()
        if prepare_only:
            return
        manager = Manager(Printer(sys.stdout))
        env = dict(os.environ, DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "starmall.settings.local"))
        python = sys.executable
        if settings.WECHAT_PAY_API_BASE == settings.SANDBOX_BASE or settings.WECHAT_API_BASE == settings.SANDBOX_BASE:
            host_port = settings.SANDBOX_BASE.split("//")[1].rstrip("/")
            host, port = host_port.split(":")
            manager.add_process("wechat", f"{python} -m starmall.wechat_sandbox --host {host} --port {port}", env=env)
        manager.add_process(
            "web",
            # Every other gunicorn setting lives in starmall/gunicorn_conf.py (README).
            f"{python} -m gunicorn -c {settings.BASE_DIR / 'starmall' / 'gunicorn_conf.py'} starmall.wsgi --bind {bind}",
            env=env,
        )
        manager.add_process(
            "worker",
            f"{python} -m celery -A starmall worker -Q default,payments,followups -c 2 -l INFO",
            env=env,
        )
        manager.add_process(
            "beat",
            f"{python} -m celery -A starmall beat -l INFO -s {settings.CELERY_BEAT_SCHEDULE_FILENAME}",
            env=env,
        )
        try:
            manager.loop()
        finally:
            if settings.EMBEDDED_REDIS:
                embedded_redis.stop()
        sys.exit(manager.returncode)

    def _prepare(self) -> None:
        out = self.stdout
        call_command("migrate", interactive=False, verbosity=0)
        out.write("database: migrated")
        call_command("collectstatic", interactive=False, verbosity=0)
        call_command("seed_demo")
        username, password = self._staff_login()
        call_command("generate_slots")
        # One year back to three ahead; a rerun on a loaded window returns at once.
        call_command("load_almanac", years_back=1, years_ahead=3, no_progress=True)
        site = settings.SITE_URL
        out.write(self.style.SUCCESS(
            "\nStarmall is starting:\n"
            f"  API        {site}/api/v1/   (docs {site}/api/docs/)\n"
            f"  health     {site}/healthz\n"
            f"  admin      {site}/admin/    login: {username} / {password}\n"
            f"  WeChat     {settings.WECHAT_PAY_API_BASE}  (sandbox control API: /sandbox/, see README)\n"
            f"  database   {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
            f"  redis {'embedded (var/redis.sock)' if settings.EMBEDDED_REDIS else 'REDIS_URL'}\n"
            "Press Ctrl-C to stop everything.\n"
        ))

    def _staff_login(self) -> tuple[str, str]:
        """Create the staff superuser once; return its login (password from the environment)."""
        username = os.environ.get("STARMALL_ADMIN_USER", "admin")
        password = os.environ.get("STARMALL_ADMIN_PASSWORD", "starmall-admin")
        User = get_user_model()
        if not User.objects.filter(username=username).exists():
            User.objects.create_superuser(username=username, email="", password=password)
        return username, password
