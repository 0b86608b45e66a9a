"""Public secrets that slip past production's refusal (API.md, corrections: the shop refuses to
start while any secret is at a public default). Each value below is, to the code that uses it,
the very key this repository publishes."""

from __future__ import annotations

import base64

import pytest

from starmall import public_secrets

REPO = public_secrets.REPO
SAMPLE_AES_KEY = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"


@pytest.mark.parametrize("last", ["E", "F", "H"])
def test_aes_key_spelled_differently_is_the_public_key(last):
    """43 base64 characters carry 258 bits; the key is 256: the last character's two low bits are
    dropped, so ...DEFE / ...DEFF / ...DEFH decode (wechatpy: b64decode(key + "=")) to WeChat's
    sample key."""
    variant = SAMPLE_AES_KEY[:-1] + last
    assert base64.b64decode(variant + "=") == base64.b64decode(SAMPLE_AES_KEY + "=")
    assert public_secrets.refusals({"WECHAT_OFFICIAL_AES_KEY": variant}), variant


@pytest.mark.parametrize(
    ("setting", "shipped", "loader"),
    [
        ("WECHAT_PAY_V3_MCH_PRIVATE_KEY", "merchant_private.pem", "load_private_key"),
        ("WECHAT_PAY_V3_PUBLIC_KEY", "platform_public.pem", "load_public_key"),
    ],
)
def test_sandbox_key_without_pem_armour_is_refused(tmp_path, setting, shipped, loader):
    """wechatpayv3 (apps/payments/wechat_v3.py) adds the BEGIN/END lines itself when a file has
    none, so a file holding only the sandbox key's base64 is the sandbox key to the shop; the
    refusal hashes it as opaque bytes and lets it through."""
    from wechatpayv3 import utils

    pem = (REPO / "wechat_sandbox" / "keys" / shipped).read_text()
    body = "".join(line for line in pem.splitlines(True) if not line.startswith("-----"))
    path = tmp_path / "key.pem"
    path.write_text(body)
    assert getattr(utils, loader)(path.read_text()) is not None  # the shop would use it
    assert public_secrets.refusals({setting: str(path)}), setting
