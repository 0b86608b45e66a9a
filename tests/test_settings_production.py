"""Production settings refuse what would break a real shop, and pass ``check --deploy`` clean.

Each case runs ``manage.py`` in a subprocess with a production environment (settings are read
once per process), asserting the exit code and the one-line error or the check's output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

BASE_DIR = Path(__file__).resolve().parent.parent
SANDBOX_KEYS = BASE_DIR / "wechat_sandbox" / "keys"
ROBOT = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6-7aoc-4bc4-97a0-0ec2sifa5aaa"
SECRET = "k3#Vq9!zR2@mL8$wT5^nY1&bH6*cJ4(dF7)gS0-aU3+eO9=pX2"  # 50 chars, as check --deploy wants
# A real merchant's other secrets (none of them is in the repository but here).
REAL = {
    "WECHAT_PAY_V3_KEY": "Zq7nR2xK9mW4tY8pB3vL6cJ1hF5dG0sA",
    "WECHAT_PAY_V3_MCH_SERIAL": "3775B6A45ACD588826D15E583A95F5DD2B8E1F07",
    "WECHAT_PAY_V3_PUBLIC_KEY_ID": "PUB_KEY_ID_0114232021202412050011000200001234",
    "WECHAT_OFFICIAL_SECRET": "9a8b7c6d5e4f30211203f4e5d6c7b8a9",
    "WECHAT_OFFICIAL_TOKEN": "q8Zr3Lw9Tn2Vb6Kx",
    "WECHAT_OFFICIAL_AES_KEY": "Xk3Rq9Zt7Lm2Wn8Bv4Cy6Hd1Fg5Js0Pa3Ue7Io9Qr2T",
    "SMS_TENCENT_SECRET_ID": "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE",
    "SMS_TENCENT_SECRET_KEY": "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE",
    "LOGISTICS_KEY": "fZxJtBqvPmWkRsLe1234",
}


def pem_key_pair(folder: Path) -> tuple[Path, Path]:
    """A fresh RSA private key and its public key, as PEM files in ``folder``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private, public = folder / "apiclient_key.pem", folder / "pub_key.pem"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return private, public


@pytest.fixture(scope="module")
def v3_keys(tmp_path_factory) -> dict[str, str]:
    """The merchant's own v3 private key and WeChat Pay's public key, as files."""
    mch_private, _ = pem_key_pair(tmp_path_factory.mktemp("merchant"))
    _, wechatpay_public = pem_key_pair(tmp_path_factory.mktemp("wechatpay"))
    return {"WECHAT_PAY_V3_MCH_PRIVATE_KEY": str(mch_private), "WECHAT_PAY_V3_PUBLIC_KEY": str(wechatpay_public)}


@pytest.fixture
def prod_env(tmp_path, v3_keys) -> dict[str, str]:
    """A complete production environment (nothing is connected to by these commands)."""
    cert, key = tmp_path / "apiclient_cert.pem", tmp_path / "apiclient_key.pem"
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    key.write_text("-----BEGIN PRIVATE KEY-----\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "WECHAT_", "STARMALL_TEST", "ALERT_", "EMAIL_", "SMS_", "LOGISTICS_"))
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "starmall.settings.production",
            "DJANGO_SECRET_KEY": SECRET,
            "DATABASE_URL": "postgres://shop:pw@127.0.0.1:5432/starmall",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "SITE_URL": "https://shop.example.com",
            "WECHAT_APPID": "wx0123456789abcdef",
            "WECHAT_APP_SECRET": "0123456789abcdef0123456789abcdef",
            "WECHAT_MCH_ID": "1900000109",
            "WECHAT_PAY_API_KEY": "abcdefghijklmnopqrstuvwxyz012345",
            "WECHAT_API_BASE": "https://api.weixin.qq.com/",
            "WECHAT_PAY_API_BASE": "https://api.mch.weixin.qq.com/",
            "WECHAT_MCH_CERT": str(cert),
            "WECHAT_MCH_KEY": str(key),
            "ALERT_WECOM_WEBHOOK_URL": ROBOT,
            **REAL,
            **v3_keys,
        }
    )
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60
    )


def setting(env: dict[str, str], expression: str) -> str:
    result = manage(env, "shell", "--no-imports", "-c", f"from django.conf import settings; print({expression})")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_check_deploy_passes_with_no_warnings(prod_env):
    result = manage(prod_env, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNINGS" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("WECHAT_PAY_API_BASE", "http://localhost:8001/"),  # the sandbox under another name
        ("WECHAT_PAY_API_BASE", "http://127.0.0.1:8001/"),
        ("WECHAT_PAY_API_BASE", "http://api.mch.weixin.qq.com/"),  # WeChat's host, not https
        ("WECHAT_PAY_API_BASE", "https://api.mch.weixin.qq.com.evil.example/"),
        ("WECHAT_PAY_API_BASE", "https://api.weixin.qq.com/"),  # the mini-program host is not Pay
        ("WECHAT_PAY_API_BASE", "https://api.mch.weixin.qq.com:8443/"),
        ("WECHAT_PAY_API_BASE", "https://api.mch.weixin.qq.com/sandboxnew/"),  # WeChat Pay's simulation: no real money
        ("WECHAT_API_BASE", "https://api.weixin.qq.com/proxy/"),  # the README: "anything else is refused"
        ("WECHAT_API_BASE", "http://localhost:8001/"),
        ("WECHAT_API_BASE", "https://api.mch.weixin.qq.com/"),
        ("WECHAT_PAY_V3_API_BASE", "http://127.0.0.1:8001"),  # merchant transfers: never the sandbox
        ("WECHAT_PAY_V3_API_BASE", "https://api.weixin.qq.com"),
    ],
)
def test_wechat_base_must_be_https_on_wechat_hosts(prod_env, name, value):
    result = manage({**prod_env, name: value}, "check")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith(f"Starmall configuration error: {name} must be https://")


def test_wechat_pay_backup_host_is_accepted(prod_env):
    result = manage({**prod_env, "WECHAT_PAY_API_BASE": "https://api2.mch.weixin.qq.com/"}, "check")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", ["WECHAT_MCH_CERT", "WECHAT_MCH_KEY"])
def test_missing_merchant_certificate_stops_start_up(prod_env, name, tmp_path):
    result = manage({**prod_env, name: str(tmp_path / "nowhere.pem")}, "check")
    assert result.returncode == 1
    assert f"Starmall configuration error: {name} must be the path of a readable PEM file" in result.stderr


def test_allowed_hosts_and_csrf_origins_come_from_site_url(prod_env):
    assert setting(prod_env, "settings.ALLOWED_HOSTS") == "['shop.example.com']"
    assert setting(prod_env, "settings.CSRF_TRUSTED_ORIGINS") == "['https://shop.example.com']"
    env = {**prod_env, "DJANGO_ALLOWED_HOSTS": "shop.example.com,api.example.com"}
    assert setting(env, "settings.ALLOWED_HOSTS") == "['shop.example.com', 'api.example.com']"


def test_site_url_must_be_https(prod_env):
    result = manage({**prod_env, "SITE_URL": "http://shop.example.com"}, "check")
    assert result.returncode == 1
    assert "Starmall configuration error: SITE_URL must be the shop's public https address" in result.stderr


def test_production_settings_import_nothing_of_the_sandbox(prod_env):
    code = (
        "import sys, django; django.setup(); import starmall.settings.production; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'wechat_sandbox'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=BASE_DIR, env=prod_env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_runshop_refuses_demo_data_under_production(prod_env):
    result = manage(prod_env, "runshop", "--prepare-only")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("CommandError: runshop loads demo data and a demo staff login")
    assert "createsuperuser" in last


@pytest.mark.parametrize(
    "value",
    [
        "http://127.0.0.1:8001/cgi-bin/webhook/send?key=5a7c0e1d-2b3f-4c5d-8e9f-0a1b2c3d4e5f",  # the sandbox
        "http://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k",  # WeCom's host, not https
        "https://qyapi.weixin.qq.com.evil.example/cgi-bin/webhook/send?key=k",
        "https://oapi.dingtalk.com/robot/send?access_token=k",  # another vendor's robot
        "https://qyapi.weixin.qq.com:8443/cgi-bin/webhook/send?key=k",
        "https://qyapi.weixin.qq.com/cgi-bin/webhook/send",  # no key
        "https://qyapi.weixin.qq.com/cgi-bin/message/send?key=k",
    ],
)
def test_alert_webhook_must_be_https_on_wecoms_host(prod_env, value):
    result = manage({**prod_env, "ALERT_WECOM_WEBHOOK_URL": value}, "check")
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "Starmall configuration error: ALERT_WECOM_WEBHOOK_URL must be https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key="
        )
    )


def test_alerts_must_reach_someone_in_production(prod_env):
    bare = {k: v for k, v in prod_env.items() if k != "ALERT_WECOM_WEBHOOK_URL"}
    result = manage(bare, "check")
    assert result.returncode == 1
    assert "Starmall configuration error: production sends alerts somewhere" in result.stderr
    log_only = {**bare, "ALERT_BACKENDS": "apps.alerts.backends.LogBackend"}  # a deliberate choice
    assert setting(log_only, "settings.ALERT_BACKENDS") == "['apps.alerts.backends.LogBackend']"
    mail_only = {**bare, "ALERT_EMAILS": "finance@example.com", "EMAIL_URL": "smtp+tls://u:p@smtp.example.com:587"}
    assert setting(mail_only, "settings.ALERT_BACKENDS, settings.EMAIL_HOST, settings.EMAIL_PORT") == (
        "['apps.alerts.backends.LogBackend', 'apps.alerts.backends.EmailBackend'] smtp.example.com 587"
    )
    assert setting(prod_env, f"settings.ALERT_BACKENDS, settings.ALERT_WECOM_WEBHOOK_URL == {ROBOT!r}") == (
        "['apps.alerts.backends.LogBackend', 'apps.alerts.backends.WeComRobotBackend'] True"
    )
    no_mails = {**prod_env, "ALERT_BACKENDS": "apps.alerts.backends.EmailBackend"}
    assert "ALERT_EMAILS must list who gets alert mails" in manage(no_mails, "check").stderr
    no_server = {**bare, "ALERT_EMAILS": "finance@example.com"}  # mails to localhost:25 reach nobody
    assert "alert mails need a mail server: set EMAIL_URL" in manage(no_server, "check").stderr


def test_the_robots_key_is_in_no_error_report(prod_env):
    """A mistyped webhook's start-up error and Django's error reports leave the key out."""
    typo = {**prod_env, "ALERT_WECOM_WEBHOOK_URL": ROBOT.replace("https://", "http://")}
    result = manage(typo, "check")
    assert result.returncode == 1 and "key=***" in result.stderr
    assert ROBOT.split("key=")[1] not in result.stderr
    assert (
        setting(
            prod_env,
            "__import__('django.views.debug', fromlist=['x']).get_default_exception_reporter_filter()"
            ".get_safe_settings()['ALERT_WECOM_WEBHOOK_URL']",
        )
        == "********************"
    )


def refusal(result: subprocess.CompletedProcess) -> str:
    """The one line start-up was refused with (asserting it is one line and exit status 1)."""
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# One start-up (3-4 s each) per kind of secret: a value, a key file, a token. Every secret's
# value is refused in-process (tests/test_public_secrets.py), and every environment variable is
# read into its setting by one start-up below (the check --deploy test lists all of them).
@pytest.mark.parametrize("name", ["WECHAT_PAY_V3_KEY", "WECHAT_PAY_V3_PUBLIC_KEY", "WECHAT_OFFICIAL_TOKEN"])
def test_a_secret_left_at_its_public_default_refuses_start_up(prod_env, name):
    """Everything else real; this one unset, so base.py's public default (the sandbox's) stays."""
    env = {k: v for k, v in prod_env.items() if k != name}
    line = refusal(manage(env, "check"))
    assert line.startswith(f"Starmall configuration error: {name} "), line
    assert "also public" not in line and "docs/DEPLOY.md §2a" in line


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DJANGO_SECRET_KEY", "dev-only-insecure-secret-key-change-me"),  # local.py's
        ("DJANGO_SECRET_KEY", "django-insecure-" + SECRET),  # Django's startproject prefix
        ("WECHAT_PAY_API_KEY", "starmall0sandbox0pay0api0key0032"),
        ("WECHAT_OFFICIAL_AES_KEY", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"),  # WeChat's sample, the tests'
    ],
)
def test_a_secret_set_to_a_public_value_refuses_start_up(prod_env, name, value):
    line = refusal(manage({**prod_env, name: value}, "check"))
    assert line.startswith(f"Starmall configuration error: {name} "), line
    assert "also public" not in line


def _reencoded(source: Path) -> bytes:
    """The same key in another PEM encoding (PKCS#1), with Windows line ends."""
    data = source.read_bytes()
    if b"PRIVATE" in data:
        key = serialization.load_pem_private_key(data, password=None)
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
    else:
        key = serialization.load_pem_public_key(data)
        pem = key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1)
    assert pem != data
    return pem.replace(b"\n", b"\r\n")


@pytest.mark.parametrize(
    ("name", "source", "reencode"),
    [
        ("WECHAT_PAY_V3_MCH_PRIVATE_KEY", "platform_private.pem", True),
        ("WECHAT_PAY_V3_PUBLIC_KEY", "platform_public.pem", False),
        ("WECHAT_MCH_KEY", "merchant_private.pem", False),  # the v2 merchant certificate's key
    ],
)
def test_a_copy_of_a_sandbox_key_elsewhere_refuses_start_up(prod_env, tmp_path, name, source, reencode):
    copy = tmp_path / "etc" / "apiclient_key.pem"
    copy.parent.mkdir()
    copy.write_bytes(_reencoded(SANDBOX_KEYS / source) if reencode else (SANDBOX_KEYS / source).read_bytes())
    line = refusal(manage({**prod_env, name: str(copy)}, "check"))
    assert line.startswith(f"Starmall configuration error: {name} ({copy}) holds a key of the WeChat sandbox"), line


def test_several_public_secrets_are_named_in_one_line(prod_env):
    env = {k: v for k, v in prod_env.items() if not k.startswith("SMS_TENCENT_SECRET")}
    line = refusal(manage({**env, "WECHAT_OFFICIAL_TOKEN": "starmallofficialtoken"}, "check"))
    assert line.startswith("Starmall configuration error: WECHAT_OFFICIAL_TOKEN is a public value"), line
    assert line.endswith("; also public: SMS_TENCENT_SECRET_ID, SMS_TENCENT_SECRET_KEY"), line


def test_with_every_secret_real_the_shop_starts_with_them(prod_env):
    names = ["WECHAT_PAY_V3_KEY", "WECHAT_OFFICIAL_TOKEN", "WECHAT_OFFICIAL_AES_KEY", "SMS_TENCENT_SECRET_KEY"]
    names += ["WECHAT_PAY_V3_MCH_PRIVATE_KEY", "WECHAT_PAY_V3_PUBLIC_KEY"]
    assert setting(prod_env, ", ".join(f"settings.{name}" for name in names)) == " ".join(prod_env[n] for n in names)


def test_check_deploy_lists_every_public_default_under_other_settings(prod_env, tmp_path):
    """An owner's production-like environment under local settings, every secret left public."""
    from starmall import public_secrets

    env = {k: v for k, v in prod_env.items() if k not in REAL and k not in ("DJANGO_SECRET_KEY", "WECHAT_APP_SECRET")}
    env = {k: v for k, v in env.items() if not k.startswith("WECHAT_PAY_V3_") and k != "WECHAT_PAY_API_KEY"}
    for name, source in (("WECHAT_MCH_CERT", "merchant_public.pem"), ("WECHAT_MCH_KEY", "merchant_private.pem")):
        (tmp_path / source).write_bytes((SANDBOX_KEYS / source).read_bytes())
        env[name] = str(tmp_path / source)
    env.update(DJANGO_SETTINGS_MODULE="starmall.settings.local", DJANGO_DEBUG="false")
    env["WECHAT_OFFICIAL_AES_KEY"] = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
    for name in ("PRINTER_FEIE_USER_KEY", "WAYBILL_KEY", "WAYBILL_SECRET", "WAYBILL_PARTNER_KEY"):  # the sandbox's
        env[name] = public_secrets.BY_SETTING[name].values[0]
    result = manage(env, "check", "--deploy")
    assert result.returncode == 1
    listed = [line.split()[2] for line in result.stderr.splitlines() if "(starmall.E001)" in line]
    assert sorted(listed) == [
        "DJANGO_SECRET_KEY",
        "LOGISTICS_KEY",
        "PRINTER_FEIE_USER_KEY",
        "SMS_TENCENT_SECRET_ID",
        "SMS_TENCENT_SECRET_KEY",
        "WAYBILL_KEY",
        "WAYBILL_PARTNER_KEY",
        "WAYBILL_SECRET",
        "WECHAT_APP_SECRET",
        "WECHAT_MCH_CERT",
        "WECHAT_MCH_KEY",
        "WECHAT_OFFICIAL_AES_KEY",
        "WECHAT_OFFICIAL_SECRET",
        "WECHAT_OFFICIAL_TOKEN",
        "WECHAT_PAY_API_KEY",
        "WECHAT_PAY_V3_KEY",
        "WECHAT_PAY_V3_MCH_PRIVATE_KEY",
        "WECHAT_PAY_V3_MCH_SERIAL",
        "WECHAT_PAY_V3_PUBLIC_KEY",
        "WECHAT_PAY_V3_PUBLIC_KEY_ID",
    ]
    assert sorted(listed) == sorted(secret.variable for secret in public_secrets.SECRETS)
    assert result.stderr.count("HINT: ") >= len(listed)
    assert "HINT: the mini-program's AppSecret (mp.weixin.qq.com" in result.stderr


def test_every_v3_key_shipped_with_the_sandbox_refuses_start_up_together(prod_env, tmp_path):
    """The v3 values set to the sandbox's, and copies of its key files (by content, under names
    an owner would use) as the merchant's private key and WeChat Pay's public key: one start-up
    names all five."""
    from wechat_sandbox import pay_v3

    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "apiclient_key.pem").write_bytes((SANDBOX_KEYS / "merchant_private.pem").read_bytes())
    (etc / "pub_key.pem").write_bytes((SANDBOX_KEYS / "merchant_public.pem").read_bytes())
    env = {
        **prod_env,
        "WECHAT_PAY_V3_KEY": pay_v3.DEMO_APIV3_KEY,
        "WECHAT_PAY_V3_MCH_PRIVATE_KEY": str(etc / "apiclient_key.pem"),
        "WECHAT_PAY_V3_MCH_SERIAL": pay_v3.DEMO_MCH_SERIAL,
        "WECHAT_PAY_V3_PUBLIC_KEY": str(etc / "pub_key.pem"),
        "WECHAT_PAY_V3_PUBLIC_KEY_ID": pay_v3.DEMO_PUBLIC_KEY_ID,
    }
    line = refusal(manage(env, "check"))
    assert line.startswith("Starmall configuration error: WECHAT_PAY_V3_KEY is a public value"), line
    assert line.endswith(
        "; also public: WECHAT_PAY_V3_MCH_PRIVATE_KEY, WECHAT_PAY_V3_MCH_SERIAL, WECHAT_PAY_V3_PUBLIC_KEY, "
        "WECHAT_PAY_V3_PUBLIC_KEY_ID"
    ), line
