"""WeChat Pay V2 wire format: safe XML parsing, WeChat-style XML writing, signatures, ids, times.

Signing (WeChat Pay V2 docs, "安全规范"): every parameter with a non-empty value except ``sign``,
sorted by key (ASCII), joined as ``k=v&k=v``, then ``&key=<API key>``; MD5 (or HMAC-SHA256 keyed
with the API key), upper-case hex. Values are signed as the strings that travel in the XML, so
an int ``0`` is signed as ``"0"`` (wechatpy's own helper would drop it).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import string
import time
from datetime import datetime, timedelta, timezone
from xml.parsers.expat import ExpatError

import xmltodict
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

#: Beijing time (UTC+8; China has no daylight saving time).
BEIJING = timezone(timedelta(hours=8), name="Asia/Shanghai")

SIGN_MD5 = "MD5"
SIGN_HMAC_SHA256 = "HMAC-SHA256"
MAX_XML_BYTES = 256 * 1024

_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "-_"


class XMLFormatError(ValueError):
    """The body is not a flat ``<xml>`` document we are willing to read."""


def parse_xml(raw: bytes | str) -> dict[str, str]:
    """Parse a WeChat ``<xml>`` body into ``{field: str}``, refusing anything unsafe.

    DTDs are rejected outright (no entity expansion, no external fetch: XXE and "billion laughs"
    cannot reach the parser), entities are disabled in expat as a second guard, whitespace is
    kept because it is part of the signed value, and nested or repeated fields are refused.

    Raises:
        XMLFormatError: empty, too large, malformed, DTD present, wrong root, not flat.
    """
    data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    if not data.strip():
        raise XMLFormatError("empty body")
    if len(data) > MAX_XML_BYTES:
        raise XMLFormatError("body too large")
    upper = data.upper()
    if b"<!DOCTYPE" in upper or b"<!ENTITY" in upper:
        raise XMLFormatError("DTD and entities are not allowed")
    try:
        doc = xmltodict.parse(data, disable_entities=True, strip_whitespace=False)
    except (ExpatError, ValueError) as exc:
        raise XMLFormatError(str(exc)) from exc
    if not isinstance(doc, dict) or list(doc) != ["xml"]:
        raise XMLFormatError("root element must be <xml>")
    root = doc["xml"] or {}
    if isinstance(root, str):
        root = {}
    out: dict[str, str] = {}
    for key, value in root.items():
        if key == "#text":
            continue
        if key.startswith("@"):
            raise XMLFormatError("attributes are not allowed")
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise XMLFormatError(f"field {key} must be a single text value")
        out[key] = value
    return out


def _cdata(text: str) -> str:
    return "<![CDATA[" + text.replace("]]>", "]]]]><![CDATA[>") + "]]>"


def to_xml(fields: dict, root: str = "xml", newlines: bool = False) -> str:
    """Write ``fields`` the way WeChat does: ints bare (``<total_fee>1</total_fee>``), strings in
    CDATA, in the given order; ``None`` values are left out. ``newlines``: one field per line,
    as in WeChat's notifications."""
    parts = [f"<{root}>"]
    for key, value in fields.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "Y" if value else "N"
        if isinstance(value, int):
            parts.append(f"<{key}>{value}</{key}>")
        else:
            parts.append(f"<{key}>{_cdata(str(value))}</{key}>")
    parts.append(f"</{root}>")
    return ("\n" if newlines else "").join(parts)


def sign_string(params: dict, api_key: str) -> bytes:
    """The string that gets hashed: sorted non-empty ``k=v`` pairs except ``sign``, ``&key=``."""
    pairs = []
    for key in sorted(params):
        if key == "sign":
            continue
        value = params[key]
        if value is None:
            continue
        text = str(value)
        if text == "":
            continue
        pairs.append(f"{key}={text}")
    pairs.append(f"key={api_key}")
    return "&".join(pairs).encode("utf-8")


def calculate_sign(params: dict, api_key: str, sign_type: str = SIGN_MD5) -> str:
    """Signature of ``params`` (values as sent) with the merchant API key: upper-case hex."""
    payload = sign_string(params, api_key)
    if sign_type == SIGN_HMAC_SHA256:
        return hmac.new(api_key.encode("utf-8"), payload, hashlib.sha256).hexdigest().upper()
    return hashlib.md5(payload).hexdigest().upper()


def verify_sign(params: dict[str, str], api_key: str) -> bool:
    """True if ``params['sign']`` matches, with the algorithm named by ``sign_type`` (default
    MD5); constant-time comparison."""
    sign_type = params.get("sign_type") or SIGN_MD5
    expected = calculate_sign(params, api_key, sign_type)
    return hmac.compare_digest(expected, (params.get("sign") or "").upper())


def signed(fields: dict, api_key: str, sign_type: str = SIGN_MD5) -> dict:
    """``fields`` plus a ``sign`` computed over them."""
    out = dict(fields)
    out.pop("sign", None)
    out["sign"] = calculate_sign(out, api_key, sign_type)
    return out


def refund_req_info_encrypt(plain_xml: str, api_key: str) -> str:
    """``req_info`` of a refund notification: base64(AES-256-ECB(PKCS7(xml))), key = lower-case
    hex MD5 of the API key (32 ASCII bytes)."""
    key = hashlib.md5(api_key.encode("utf-8")).hexdigest().encode("ascii")
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plain_xml.encode("utf-8")) + padder.finalize()
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return base64.b64encode(enc.update(padded) + enc.finalize()).decode("ascii")


def refund_req_info_decrypt(req_info: str, api_key: str) -> str:
    """Inverse of :func:`refund_req_info_encrypt` (used by tests and tools)."""
    key = hashlib.md5(api_key.encode("utf-8")).hexdigest().encode("ascii")
    dec = Cipher(algorithms.AES(key), modes.ECB()).decryptor()
    padded = dec.update(base64.b64decode(req_info)) + dec.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    return (unpadder.update(padded) + unpadder.finalize()).decode("utf-8")


# --- ids and times -------------------------------------------------------------------------


def nonce_str(length: int = 32) -> str:
    """Random alphanumeric string, like WeChat's ``nonce_str``."""
    return "".join(secrets.choice(_ALNUM) for _ in range(length))


def digits(length: int) -> str:
    return "".join(secrets.choice(string.digits) for _ in range(length))


def new_openid() -> str:
    """An openid shaped like WeChat's: ``o`` + 27 url-safe characters."""
    return "o" + "".join(secrets.choice(_URLSAFE) for _ in range(27))


def new_unionid() -> str:
    return "o" + "".join(secrets.choice(_URLSAFE) for _ in range(27))


def new_session_key() -> str:
    """A ``session_key``: base64 of 16 random bytes (24 chars)."""
    return base64.b64encode(secrets.token_bytes(16)).decode("ascii")


def beijing(ts: float | None = None) -> datetime:
    """Aware Beijing datetime for an epoch timestamp (now if None)."""
    return datetime.fromtimestamp(time.time() if ts is None else ts, tz=BEIJING)


def compact_time(ts: float) -> str:
    """``yyyyMMddHHmmss`` in Beijing time (``time_end``, ``time_start``)."""
    return beijing(ts).strftime("%Y%m%d%H%M%S")


def dashed_time(ts: float) -> str:
    """``yyyy-MM-dd HH:mm:ss`` in Beijing time (refund ``success_time``, bills)."""
    return beijing(ts).strftime("%Y-%m-%d %H:%M:%S")


def parse_compact_time(text: str) -> float | None:
    """Epoch seconds of a ``yyyyMMddHHmmss`` Beijing time, or None if malformed."""
    try:
        return datetime.strptime(text, "%Y%m%d%H%M%S").replace(tzinfo=BEIJING).timestamp()
    except (TypeError, ValueError):
        return None


def new_prepay_id(ts: float) -> str:
    """``wx`` + yyyyMMddHHmmss + 20 hex chars (36 chars, like WeChat's)."""
    return "wx" + compact_time(ts) + secrets.token_hex(10)


def new_transaction_id(ts: float) -> str:
    """28 digits: ``4200`` + 6 digits + yyyyMMdd (Beijing) + 10 digits."""
    return "4200" + digits(6) + beijing(ts).strftime("%Y%m%d") + digits(10)


def new_refund_id(ts: float) -> str:
    """29 digits: ``5000`` + yyyyMMdd (Beijing) + 17 digits."""
    return "5000" + beijing(ts).strftime("%Y%m%d") + digits(17)


def yuan(fen: int) -> str:
    """Integer fen as yuan with two decimals (``1990 -> '19.90'``, ``-5 -> '-0.05'``)."""
    sign = "-" if fen < 0 else ""
    fen = abs(int(fen))
    return f"{sign}{fen // 100}.{fen % 100:02d}"
