"""The secrets this repository makes public, in one place.

The shared settings (``starmall/settings/wechat.py``) take their development defaults from :func:`default`;
production settings refuse to start while :func:`refusals` finds one in use, and ``manage.py check --deploy``
lists them all (``starmall/checks.py``). A value is public when it is listed here (the WeChat sandbox's demo
credentials, the test settings' values, WeChat's documentation samples); a key FILE when its key is one of the
sandbox's key pairs (``wechat_sandbox/keys/``), wherever it was copied and however encoded (:func:`key_digest`).
Imports nothing of the sandbox (production may not); ``tests/test_public_secrets.py`` holds this list equal to the
sandbox's. How to make each real one: docs/DEPLOY.md §2a.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SANDBOX_KEYS = "wechat_sandbox/keys"
#: sha256 of the SubjectPublicKeyInfo DER of the sandbox's key pairs: merchant, platform (WeChat Pay).
SANDBOX_KEY_DIGESTS = frozenset(
    {
        "d788fb7474ebb4db05091ab794dbd512df974b2f46dbb6f8d87a39812c9085e3",
        "ede7b55000fc601b8c725b7aa67de47d4fd80cf0bee6d65a31ad7a38878e235f",
    }
)
MCH = "pay.weixin.qq.com 商户平台 › 账户中心 › API安全"


@dataclass(frozen=True)
class Secret:
    """``setting`` (set by the environment variable ``env``) and its public ``values``: the first
    is the settings' default when ``has_default``. ``key_file``: a PEM path, public by its key."""

    setting: str
    values: tuple[str, ...]
    how: str
    env: str = ""
    has_default: bool = True
    key_file: bool = False

    @property
    def variable(self) -> str:
        return self.env or self.setting


SECRETS = (
    Secret(
        "SECRET_KEY",
        ("dev-only-insecure-secret-key-change-me", "test-secret-key"),
        'python -c "import secrets; print(secrets.token_urlsafe(64))"',
        env="DJANGO_SECRET_KEY",
        has_default=False,  # base: empty (production requires it); local.py takes the first
    ),
    Secret(
        "WECHAT_APP_SECRET",
        ("0f1e2d3c4b5a69788796a5b4c3d2e1f0",),
        "the mini-program's AppSecret (mp.weixin.qq.com 小程序后台 › 开发管理 › 开发设置 › AppSecret 生成)",
    ),
    Secret(
        "WECHAT_PAY_API_KEY",
        (
            "starmall0sandbox0pay0api0key0032",
            "0therMerchant0Key000000000000032",
        ),  # the sandbox's, its "other merchant"'s
        f"the merchant's 32-character APIv2 key ({MCH} › APIv2密钥 设置)",
    ),
    Secret(
        "WECHAT_PAY_V3_KEY",
        ("starmall0sandbox0apiv3key0000032",),
        f"the merchant's 32-character APIv3 key ({MCH} › APIv3密钥 设置)",
    ),
    Secret(
        "WECHAT_PAY_V3_MCH_PRIVATE_KEY",
        (f"{SANDBOX_KEYS}/merchant_private.pem",),
        f"the path of apiclient_key.pem of the merchant API certificate ({MCH} › API证书 申请)",
        key_file=True,
    ),
    Secret(
        "WECHAT_PAY_V3_MCH_SERIAL",
        ("5157F09EFDC096DE15EBE81A47057A72SANDBOX0",),
        f"the merchant API certificate's serial number ({MCH} › API证书 管理证书)",
    ),
    Secret(
        "WECHAT_PAY_V3_PUBLIC_KEY",
        (f"{SANDBOX_KEYS}/platform_public.pem",),
        f"the path of WeChat Pay's public key pub_key.pem ({MCH} › 微信支付公钥 下载)",
        key_file=True,
    ),
    Secret(
        "WECHAT_PAY_V3_PUBLIC_KEY_ID",
        ("PUB_KEY_ID_0119000001092026120100SANDBOX",),
        f"the id PUB_KEY_ID_... shown beside WeChat Pay's public key ({MCH} › 微信支付公钥)",
    ),
    Secret(
        "WECHAT_MCH_CERT",
        (),
        f"the path of apiclient_cert.pem of the merchant API certificate ({MCH} › API证书)",
        has_default=False,
        key_file=True,
    ),
    Secret(
        "WECHAT_MCH_KEY",
        (),
        f"the path of apiclient_key.pem of the merchant API certificate ({MCH} › API证书)",
        has_default=False,
        key_file=True,
    ),
    Secret(
        "WECHAT_OFFICIAL_SECRET",
        ("7c6b5a4938271605f4e3d2c1b0a99887",),
        "the official account's AppSecret (mp.weixin.qq.com 公众号 › 设置与开发 › 基本配置 › 开发者密码)",
    ),
    Secret(
        "WECHAT_OFFICIAL_TOKEN",
        ("starmallofficialtoken", "testtoken"),
        "a Token of your own, 3-32 letters and digits, entered in 公众号 › 设置与开发 › 基本配置 › 服务器配置",
    ),
    Secret(
        "WECHAT_OFFICIAL_AES_KEY",
        ("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",),  # WeChat's sample, the tests' key
        "the 43-character EncodingAESKey generated in 公众号 › 服务器配置 (随机生成), or empty for plaintext mode",
        has_default=False,
    ),
    Secret(
        "SMS_TENCENT_SECRET_ID",
        ("AKIDstarmallSandbox0000000000000000",),
        "the SecretId of a Tencent Cloud API key (console.cloud.tencent.com/cam/capi, 访问管理 › API密钥管理)",
    ),
    Secret(
        "SMS_TENCENT_SECRET_KEY",
        ("starmallSandboxSecretKey00000000",),
        "the SecretKey of that Tencent Cloud API key (访问管理 › API密钥管理)",
    ),
    Secret(
        "LOGISTICS_KEY",
        ("starmall-logistics-sandbox-key",),
        "your Kuaidi100 authorization key (api.kuaidi100.com 管理后台 › 我的信息 › 授权信息)",
    ),
    # Receipt printers and electronic waybills (apps.printing): empty until the shop has the
    # accounts (the sandbox printer and waybills need none); the sandbox's own are public.
    Secret(
        "PRINTER_FEIE_USER_KEY",
        ("starmallSandboxUkey0001",),
        "the UKEY of your 飞鹅云 account (admin.feieyun.com 个人中心 › UKEY; not a printer's key)",
        has_default=False,
    ),
    Secret(
        "WAYBILL_KEY",
        ("starmallWaybillSandboxKey",),
        "your Kuaidi100 authorization key (api.kuaidi100.com 管理后台 › 我的信息 › 授权信息)",
        has_default=False,
    ),
    Secret(
        "WAYBILL_SECRET",
        ("starmallWaybillSandboxSecret0001",),
        "your Kuaidi100 secret (api.kuaidi100.com 管理后台 › 我的信息 › 授权信息)",
        has_default=False,
    ),
    Secret(
        "WAYBILL_PARTNER_KEY",
        ("starmall-sandbox-partner",),
        "the 电子面单 password your carrier's branch gave with the partnerId (Kuaidi100 参数字典: whether it needs one)",
        has_default=False,
    ),
)
BY_SETTING = {secret.setting: secret for secret in SECRETS}


@dataclass(frozen=True)
class Refusal:
    """One setting at a public value: ``problem`` says which, ``how`` where the real one comes from."""

    setting: str
    variable: str
    problem: str
    how: str

    @property
    def line(self) -> str:
        return f"{self.problem}: {self.how} (docs/DEPLOY.md §2a)"


def default(setting: str) -> str:
    """The development default of ``setting``: its first public value (a key file's as an
    absolute path into this repository)."""
    value = BY_SETTING[setting].values[0]
    return str(REPO / value) if BY_SETTING[setting].key_file else value


def key_digest(data: bytes) -> str:
    """sha256 (hex) of the public key in a private key, public key or certificate — PEM, DER, or
    PEM's base64 body without its BEGIN/END lines (wechatpayv3 adds them itself); of the bytes
    without whitespace when they hold none of these."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    forms = [data]
    try:
        forms.append(base64.b64decode(b"".join(re.sub(rb"-----[^-]*-----", b"", data).split()), validate=True))
    except ValueError:
        pass
    loaders = (
        lambda raw: serialization.load_pem_private_key(raw, password=None).public_key(),
        lambda raw: serialization.load_pem_public_key(raw),
        lambda raw: x509.load_pem_x509_certificate(raw).public_key(),
        lambda raw: serialization.load_der_private_key(raw, password=None).public_key(),
        lambda raw: serialization.load_der_public_key(raw),
        lambda raw: x509.load_der_x509_certificate(raw).public_key(),
    )
    for raw in forms:
        for load in loaders:
            try:
                key = load(raw)
            except (ValueError, TypeError):
                continue
            der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
            return hashlib.sha256(der).hexdigest()
    return hashlib.sha256(b"".join(data.split())).hexdigest()


def _aes_key_bytes(value: str) -> bytes | None:
    """The 32 bytes an EncodingAESKey stands for (WeChat: base64 of ``key + "="``), or None."""
    try:
        return base64.b64decode(value + "=")
    except ValueError:
        return None


#: the keys the public EncodingAESKey spellings stand for (several spellings decode to one key)
PUBLIC_AES_KEYS = frozenset(_aes_key_bytes(v) for v in BY_SETTING["WECHAT_OFFICIAL_AES_KEY"].values) - {None}


def _weak_secret_key(value: str) -> bool:
    """Django's own measure (``security.W009``): short, few characters, or ``django-insecure-``."""
    from django.core.checks.security import base

    return (
        len(value) < base.SECRET_KEY_MIN_LENGTH
        or len(set(value)) < base.SECRET_KEY_MIN_UNIQUE_CHARACTERS
        or value.startswith(base.SECRET_KEY_INSECURE_PREFIX)
    )


def _problem(secret: Secret, value: str) -> str:
    """Why ``value`` of ``secret`` is public ("" when it is not)."""
    name = secret.variable
    if secret.key_file:
        try:
            data = Path(value).read_bytes() if value else b""
        except OSError:
            return ""  # not readable: production's file checks say so
        if data and key_digest(data) in SANDBOX_KEY_DIGESTS:
            return (
                f"{name} ({value}) holds a key of the WeChat sandbox, whose private half is public in this repository"
            )
        return ""
    same_key = secret.setting == "WECHAT_OFFICIAL_AES_KEY" and _aes_key_bytes(value) in PUBLIC_AES_KEYS
    if value in secret.values or same_key:
        return f"{name} is a public value shipped in this repository"
    if secret.setting == "SECRET_KEY" and _weak_secret_key(value):
        return f"{name} is too short or not random (Django asks for 50+ random characters, not django-insecure-...)"
    return ""


def refusals(values: Mapping[str, object]) -> list[Refusal]:
    """Every setting of :data:`SECRETS` whose value in ``values`` (a settings module's globals or
    ``{name: getattr(settings, name)}``) is public, in :data:`SECRETS` order."""
    found = []
    for secret in SECRETS:
        value = values.get(secret.setting)
        problem = _problem(secret, value) if isinstance(value, str) else ""
        if problem:
            found.append(Refusal(secret.setting, secret.variable, problem, secret.how))
    return found


def refusal_line(found: list[Refusal]) -> str:
    """The one line production stops with: the first setting in full, the others by name."""
    others = [refusal.variable for refusal in found[1:]]
    return found[0].line + (f"; also public: {', '.join(others)}" if others else "")
