"""The list of public secrets (starmall/public_secrets.py) is complete: it holds every secret the
WeChat sandbox ships (values and key files), and base.py takes every secret default from it.
What production does with the list: tests/test_settings_production.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from starmall import public_secrets
from wechat_sandbox import config, logistics, official, pay_v3, sms

BASE_DIR = Path(__file__).resolve().parent.parent
SANDBOX_KEYS = BASE_DIR / "wechat_sandbox" / "keys"
SECRET_NAME = re.compile(r"(SECRET|TOKEN|PASSWORD|_KEY$|_KEY_ID$|_SERIAL$|_CERT$)")
# Secret-looking names in base.py that are not a secret default (with the reason).
NOT_SECRET_DEFAULTS = {
    "AUTH_PASSWORD_VALIDATORS": "not a secret",
    "AUTH_TOKEN_TTL_SECONDS": "not a secret",
    "SANDBOX_ROBOT_KEY": "inside ALERT_WECOM_WEBHOOK_URL, whose sandbox host production refuses",
}


@pytest.mark.parametrize(
    ("setting", "shipped"),
    [
        ("WECHAT_APP_SECRET", config.DEMO_APP_SECRET),
        ("WECHAT_PAY_API_KEY", config.DEMO_PAY_API_KEY),
        ("WECHAT_PAY_V3_KEY", pay_v3.DEMO_APIV3_KEY),
        ("WECHAT_PAY_V3_MCH_SERIAL", pay_v3.DEMO_MCH_SERIAL),
        ("WECHAT_PAY_V3_PUBLIC_KEY_ID", pay_v3.DEMO_PUBLIC_KEY_ID),
        ("WECHAT_OFFICIAL_SECRET", official.DEMO_OFFICIAL_SECRET),
        ("WECHAT_OFFICIAL_TOKEN", official.DEMO_OFFICIAL_TOKEN),
        ("SMS_TENCENT_SECRET_ID", sms.SECRET_ID),
        ("SMS_TENCENT_SECRET_KEY", sms.SECRET_KEY),
        ("LOGISTICS_KEY", logistics.KEY),
    ],
)
def test_every_secret_the_sandbox_ships_is_the_default_and_refused(setting, shipped):
    assert public_secrets.default(setting) == shipped
    assert [r.setting for r in public_secrets.refusals({setting: shipped})] == [setting]
    assert public_secrets.refusals({setting: shipped + "x"}) == []


@pytest.mark.parametrize("pem", sorted(p.name for p in SANDBOX_KEYS.glob("*.pem")))
def test_every_key_file_the_sandbox_ships_is_known_by_its_key(pem, tmp_path):
    assert len(list(SANDBOX_KEYS.glob("*.pem"))) == 4
    assert public_secrets.key_digest((SANDBOX_KEYS / pem).read_bytes()) in public_secrets.SANDBOX_KEY_DIGESTS
    copy = tmp_path / "apiclient_key.pem"
    copy.write_bytes((SANDBOX_KEYS / pem).read_bytes())
    for setting in ("WECHAT_PAY_V3_MCH_PRIVATE_KEY", "WECHAT_PAY_V3_PUBLIC_KEY", "WECHAT_MCH_CERT", "WECHAT_MCH_KEY"):
        assert [r.setting for r in public_secrets.refusals({setting: str(copy)})] == [setting]


def test_a_key_of_ones_own_is_not_public(tmp_path):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert public_secrets.key_digest(private) == public_secrets.key_digest(public)  # one pair, one digest
    assert public_secrets.key_digest(private) not in public_secrets.SANDBOX_KEY_DIGESTS
    (tmp_path / "k.pem").write_bytes(private)
    assert public_secrets.refusals({"WECHAT_PAY_V3_MCH_PRIVATE_KEY": str(tmp_path / "k.pem")}) == []
    assert public_secrets.refusals({"WECHAT_PAY_V3_MCH_PRIVATE_KEY": str(tmp_path / "absent.pem")}) == []


def test_the_shared_settings_take_every_secret_default_from_the_list():
    """A secret-looking setting in the shared settings (base.py and the concern modules it gathers)
    defaults to "" or to public_secrets.default(its name) (as _public), and each registered default
    is there: a new public default cannot bypass the list."""
    shared = [
        p for p in (BASE_DIR / "starmall" / "settings").glob("*.py") if p.stem not in ("local", "production", "test")
    ]
    assert {p.stem for p in shared} >= {"base", "wechat"}
    defaults = {}
    for node in (n for path in shared for n in ast.walk(ast.parse(path.read_text()))):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if SECRET_NAME.search(name) and name not in NOT_SECRET_DEFAULTS:
                default = next(k.value for k in node.value.keywords if k.arg == "default")
                defaults[name] = ast.unparse(default)
    registered = {s.setting for s in public_secrets.SECRETS if s.has_default}
    assert {n: d for n, d in defaults.items() if d != "''"} == {n: f"_public('{n}')" for n in registered}
    assert set(defaults) == {s.setting for s in public_secrets.SECRETS}


def test_weak_django_secret_keys_are_refused():
    strong = "k3#Vq9!zR2@mL8$wT5^nY1&bH6*cJ4(dF7)gS0-aU3+eO9=pX2"
    assert public_secrets.refusals({"SECRET_KEY": strong}) == []
    for weak in ("django-insecure-" + strong, strong[:49], "ab12" * 15, "test-secret-key"):
        assert [r.variable for r in public_secrets.refusals({"SECRET_KEY": weak})] == ["DJANGO_SECRET_KEY"]


def test_the_sandboxs_other_merchant_key_is_public_too():
    """The sandbox signs with a second merchant's key for wrong-key notifications; it is public as well."""
    from wechat_sandbox import fixtures

    assert [r.setting for r in public_secrets.refusals({"WECHAT_PAY_API_KEY": fixtures.OTHER_MERCHANT_KEY})] == [
        "WECHAT_PAY_API_KEY"
    ]
