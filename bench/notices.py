"""The signed WeChat "paid" notifications the benchmarks deliver (``bench_shop``'s storm,
``profile_hot``'s ``notify``)."""

from __future__ import annotations


def paid_notices(orders: list, *, stamp: str) -> list[bytes]:
    """The signed "paid" notification of each of ``orders`` (its ``pay_fen``, its customer's
    openid; load ``customer`` with them), as WeChat sends it: the sandbox's own payload code
    (``wechat_sandbox.payloads``) with the shop's credentials. ``stamp``: yyyyMMddHHmmss
    (Beijing), the time_end and the middle of each order's own transaction_id."""
    from django.conf import settings

    from wechat_sandbox import payloads
    from wechat_sandbox.config import SandboxConfig

    config = SandboxConfig(
        appid=settings.WECHAT_APPID, mch_id=settings.WECHAT_MCH_ID, api_key=settings.WECHAT_PAY_API_KEY
    )
    return [
        payloads.payment_notification_xml(
            config,
            payloads.paid_trade(
                out_trade_no=order.order_no,
                total_fee=order.pay_fen,
                openid=order.customer.openid,
                transaction_id=f"4200{stamp}{i:010d}",
                time_end=stamp,
            ),
        ).encode()
        for i, order in enumerate(orders)
    ]
