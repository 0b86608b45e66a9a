"""``manage.py runshop``: the whole demo shop on one machine (what ``make run`` does).

Prepares the database (migrate, demo data once, staff login, slots, almanac window), then runs every
process under supervisord (``starmall.supervision``) — web (gunicorn, ``starmall/gunicorn_conf.py``),
Celery worker, Celery beat, the embedded Redis when ``REDIS_URL`` is unset and, while WeChat points at
this machine, the local WeChat sandbox. A process that exits is restarted (with back-off when it keeps
failing) and logged; the others go on. Ctrl-C (SIGINT) or SIGTERM stops all of them, the embedded Redis
included. A demo tool: it refuses to run under ``starmall.settings.production`` (demo data and a known
staff password have no place in a real shop; docs/DEPLOY.md says what to run instead).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from starmall import embedded_redis, supervision
from starmall.roles import ROLES, roles_from_environ, startup_lock

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
# Days of demo slots made at start-up (beat then keeps SLOT_DAYS_AHEAD): the almanac's longest
# run without a day good for 出行 is 15 days (lunar-python 1.4.8, 2020-2100), so docs/TRY.md's
# "first 宜出行 day at least 2 days ahead" always has slots, whatever the date.
DEMO_SLOT_DAYS = 31


def sandbox_address() -> tuple[str, int] | None:
    """``(host, port)`` of the local WeChat sandbox to start, or None.

    The sandbox runs when ``WECHAT_PAY_API_BASE``, ``WECHAT_API_BASE`` or ``LOGISTICS_API_BASE``
    (its parcel-tracking sandbox) is plain http on this machine at ``WECHAT_SANDBOX_PORT``
    (8001 by default); a base anywhere else (another port or host: another machine's sandbox)
    is used as it is and nothing is started for it.
    """
    for base in (settings.WECHAT_PAY_API_BASE, settings.WECHAT_API_BASE, settings.LOGISTICS_API_BASE):
        url = urlsplit(base)
        if url.scheme == "http" and url.hostname in LOOPBACK_HOSTS and (url.port or 80) == settings.WECHAT_SANDBOX_PORT:
            return url.hostname, url.port or 80
    return None


def machine_roles() -> frozenset[str]:
    """This machine's ``STARMALL_ROLES`` (``starmall.roles``); CommandError for an unknown role."""
    try:
        return roles_from_environ(os.environ)
    except ValueError as exc:
        raise CommandError(str(exc)) from exc


class Command(BaseCommand):
    help = "Prepare the database and run web, worker, beat and the WeChat sandbox until Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default=os.environ.get("WEB_BIND", "127.0.0.1:8000"))
        parser.add_argument("--prepare-only", action="store_true", help="prepare, then exit")

    def handle(self, *args, bind: str, prepare_only: bool, **options):
        if not settings.DEMO_SHOP_ALLOWED:
            raise CommandError(
                "runshop loads demo data and a demo staff login, which production settings refuse: "
                "run `manage.py migrate`, `manage.py createsuperuser` and the processes in docs/DEPLOY.md"
            )
        roles = machine_roles()
        self._prepare(bind, roles)
        if prepare_only:
            return
        sys.exit(self._supervise(bind, roles))

    def _supervise(self, bind: str, roles: frozenset[str]) -> int:
        """Run supervisord in the foreground until it exits (the programs of ``roles``); return
        its exit code."""
        redis_command = None
        if settings.EMBEDDED_REDIS:
            embedded_redis.stop()  # the server manage.py started for the preparation: supervisord runs its own
            redis_command = embedded_redis.server_command(daemonize=False)
        queues = [settings.CELERY_TASK_DEFAULT_QUEUE] + sorted(
            {r["queue"] for r in settings.CELERY_TASK_ROUTES.values()}
        )
        programs = supervision.shop_programs(
            queues=queues,
            beat_schedule=settings.CELERY_BEAT_SCHEDULE_FILENAME,
            sandbox=sandbox_address() if "sandbox" in roles else None,
            redis_command=redis_command,
            roles=roles,
            worker_name=f"worker{os.getpid()}@%h",
        )
        config = supervision.write_config(
            Path(settings.VAR_DIR) / "supervisor" / "supervisord.conf", programs, directory=settings.BASE_DIR
        )
        env = dict(
            os.environ,
            WEB_BIND=bind,
            PYTHONUNBUFFERED="1",
            DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "starmall.settings.local"),
        )
        self.stdout.write(f"supervisord: {config} (supervisorctl -c {config} status)", ending="\n")
        self.stdout.flush()
        process = subprocess.Popen([sys.executable, "-m", "supervisor.supervisord", "-n", "-c", str(config)], env=env)

        def forward(signum, frame):  # Ctrl-C reaches supervisord too; SIGTERM may reach only us
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)

        signal.signal(signal.SIGINT, forward)
        signal.signal(signal.SIGTERM, forward)
        try:
            code = process.wait()
        finally:
            if settings.EMBEDDED_REDIS:
                embedded_redis.stop()  # only if something left it running
        return code

    def _prepare(self, bind: str, machine: frozenset[str]) -> None:
        """The shop's one-time work under the shop-wide start-up lock (``starmall.roles``: two
        machines starting at once take turns, the second finds it done), then this machine's own
        (collected static files for its web server)."""
        out = self.stdout
        with startup_lock() as waited:
            if waited >= 1:
                out.write(f"start-up: waited {waited:.0f} s for another machine's preparation")
            call_command("migrate", interactive=False, verbosity=0)
            out.write("database: migrated")
            call_command("seed_demo")
            username, password = self._staff_login()
            roles = self._role_logins()
            call_command("generate_slots", days=DEMO_SLOT_DAYS)
            # One year back to three ahead; a rerun on a loaded window returns at once.
            call_command("load_almanac", years_back=1, years_ahead=3, no_progress=True)
        if "web" in machine:
            call_command("collectstatic", interactive=False, verbosity=0)  # this machine's files
        site = settings.SITE_URL
        sandbox = sandbox_address() if "sandbox" in machine else None
        out.write(
            self.style.SUCCESS(
                "\nStarmall is starting:\n"
                f"  API        {site}/api/v1/   (docs {site}/api/docs/; gunicorn on {bind})\n"
                f"  health     {site}/healthz\n"
                f"  admin      {site}/admin/    login: {username} / {password}\n"
                + "".join(f"             {role}: {login} / {secret}\n" for role, login, secret in roles)
                + f"  WeChat     {settings.WECHAT_PAY_API_BASE}"
                + (f"  (sandbox on port {sandbox[1]}, control API: /sandbox/, see README)\n" if sandbox else "\n")
                + f"  database   {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
                f"  redis {'embedded (var/redis.sock)' if settings.EMBEDDED_REDIS else 'REDIS_URL'}\n"
                f"  roles      {','.join(r for r in ROLES if r in machine)} (STARMALL_ROLES)\n"
                "Press Ctrl-C to stop everything.\n"
            )
        )

    def _role_logins(self) -> list[tuple[str, str, str]]:
        """One demo staff login per role (apps/backoffice/roles.py), created once; the password is
        ``starmall-<login>``. Only here: runshop refuses production settings (no demo logins)."""
        from django.contrib.auth.models import Group, Permission

        from apps.backoffice.roles import DEMO_LOGINS, sync_roles

        sync_roles(Group, Permission)  # permissions added since the migration (e.g. chat)
        User = get_user_model()
        out = []
        for role, login in DEMO_LOGINS.items():
            secret = f"starmall-{login}"
            user, created = User.objects.get_or_create(username=login, defaults={"is_staff": True})
            if created:
                user.set_password(secret)
                user.save(update_fields=["password"])
                user.groups.add(Group.objects.get(name=role))
            if login == "teacher":
                self._link_demo_teacher(user)
            out.append((role, login, secret))
        return out

    def _link_demo_teacher(self, user) -> None:
        """The demo teacher login is the first teacher's own (the 老师 role sees only the slots
        and chats of the teacher linked to it), unless some teacher is linked to it already."""
        from apps.catalog.models import Teacher

        if not Teacher.objects.filter(user=user).exists():
            first = Teacher.objects.filter(user__isnull=True).order_by("pk").first()
            if first is not None:
                Teacher.objects.filter(pk=first.pk, user__isnull=True).update(user=user)

    def _staff_login(self) -> tuple[str, str]:
        """Create the staff superuser once; return its login (password from the environment)."""
        username = os.environ.get("STARMALL_ADMIN_USER", "admin")
        password = os.environ.get("STARMALL_ADMIN_PASSWORD", "starmall-admin")
        User = get_user_model()
        if not User.objects.filter(username=username).exists():
            User.objects.create_superuser(username=username, email="", password=password)
        return username, password
