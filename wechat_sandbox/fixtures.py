"""Generate the static notification payloads of ``fixtures/wechat/``.

``python -m wechat_sandbox.fixtures fixtures/wechat`` rewrites them; every value is
fixed (nonces included), so the output is byte-for-byte reproducible. Signed with the demo
credentials. The files' README lists what is inside each one.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from . import payloads, wire
from .config import SandboxConfig
from .models import R_SUCCESS, Refund, Trade

OPENID = "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"
TRANSACTION_ID = "4200001234202611301234567890"
TIME_END = "20261130120130"  # Beijing
OTHER_MERCHANT_KEY = "0therMerchant0Key000000000000032"


def _trade(
    out_trade_no: str,
    total_fee: int,
    coupon_fee: int = 0,
    transaction_id: str = TRANSACTION_ID,
    coupon_id: str | None = None,
) -> Trade:
    return payloads.paid_trade(
        out_trade_no=out_trade_no,
        total_fee=total_fee,
        openid=OPENID,
        transaction_id=transaction_id,
        time_end=TIME_END,
        coupon_fee=coupon_fee,
        coupon_id=coupon_id,
    )


def build(config: SandboxConfig | None = None) -> dict[str, str]:
    """``{file name: content}`` of every fixture."""
    config = config or SandboxConfig()
    files: dict[str, str] = {}

    paid = _trade("SM2026113000000001", 19900)
    files["payment_notify_success.xml"] = payloads.payment_notification_xml(
        config, paid, nonce="5K8264ILTKCH16CQ2502SI8ZNMTM67VS"
    )

    coupon = _trade(
        "SM2026113000000002",
        19900,
        coupon_fee=2000,
        transaction_id="4200001234202611301234567891",
        coupon_id="20000000012345",
    )
    files["payment_notify_coupon.xml"] = payloads.payment_notification_xml(
        config, coupon, nonce="Q3aVcZ1xY7bN5mK9pL2sD4fG6hJ8kL0z"
    )

    # Signed over total_fee 19900, then the amount was changed to 1 fen: signature no longer fits.
    tampered = payloads.payment_notification_fields(
        config,
        _trade("SM2026113000000003", 19900, transaction_id="4200001234202611301234567892"),
        nonce="T4mP3r3dN0nc3T4mP3r3dN0nc3T4mP3r",
    )
    tampered["total_fee"] = 1
    files["payment_notify_bad_sign.xml"] = wire.to_xml(tampered, newlines=True)

    # Consistent, but signed with another merchant's key.
    wrong = payloads.payment_notification_fields(
        replace(config, api_key=OTHER_MERCHANT_KEY),
        _trade("SM2026113000000004", 19900, transaction_id="4200001234202611301234567893"),
        nonce="W7r0ngK3yN0nc3W7r0ngK3yN0nc3W7r0",
    )
    files["payment_notify_wrong_key.xml"] = wire.to_xml(wrong, newlines=True)

    files["payment_notify_xxe.xml"] = (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<!DOCTYPE xml [\n  <!ENTITY xxe SYSTEM "file:///etc/passwd">\n]>\n'
        + payloads.payment_notification_xml(
            config,
            _trade("SM2026113000000005", 19900, transaction_id="4200001234202611301234567894"),
            nonce="XX3XX3XX3XX3XX3XX3XX3XX3XX3XX3XX",
        ).replace("<openid><![CDATA[" + OPENID + "]]></openid>", "<openid>&xxe;</openid>")
    )
    files["payment_notify_entity_bomb.xml"] = (
        '<?xml version="1.0"?>\n<!DOCTYPE xml [\n  <!ENTITY a "aaaaaaaaaa">\n'
        + "".join(f'  <!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">\n' for i in range(8))
        + "]>\n<xml><return_code>SUCCESS</return_code><out_trade_no>&i;</out_trade_no></xml>\n"
    )

    refund = Refund(
        out_refund_no="RF2026113000000001",
        refund_id="50002026113012345678901234567",
        out_trade_no=paid.out_trade_no,
        transaction_id=paid.transaction_id,
        total_fee=19900,
        refund_fee=19900,
        notify_url="",
        refund_account="REFUND_SOURCE_UNSETTLED_FUNDS",
        refund_desc="",
        created_at=0,
        settle_at=0,
        status=R_SUCCESS,
        success_at=wire.parse_compact_time("20261130120500"),
    )
    files["refund_notify_success.xml"] = payloads.refund_notification_xml(
        config, refund, nonce="R3fundN0nc3R3fundN0nc3R3fundN0nc"
    )
    files["refund_notify_success.req_info.xml"] = wire.to_xml(
        payloads.refund_info_fields(config, refund), root="root", newlines=True
    )
    return {name: text if text.endswith("\n") else text + "\n" for name, text in files.items()}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0] if args else "fixtures/wechat")
    target.mkdir(parents=True, exist_ok=True)
    for name, text in build().items():
        (target / name).write_text(text, encoding="utf-8")
        print(target / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
