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


def paid_notices_v3(orders: list, *, stamp: str) -> list[tuple[bytes, dict]]:
    """The Pay API v3 ``TRANSACTION.SUCCESS`` notification of each of ``orders`` as WeChat sends
    it: the sandbox's own code (``wechat_sandbox.pay_v3_trades``: the resource AES-256-GCM
    encrypted with the APIv3 key, the body signed with its WeChat Pay key, timestamped now, so
    deliver them within 5 minutes). Returns ``(body, headers)`` pairs."""
    from django.conf import settings

    from wechat_sandbox import pay_v3_trades

    notices = []
    for i, order in enumerate(orders):
        resource = {
            "appid": settings.WECHAT_APPID,
            "mchid": settings.WECHAT_MCH_ID,
            "out_trade_no": order.order_no,
            "transaction_id": f"4200{stamp}{i:010d}",
            "trade_type": "JSAPI",
            "trade_state": "SUCCESS",
            "trade_state_desc": "支付成功",
            "bank_type": "OTHERS",
            "success_time": f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[8:10]}:{stamp[10:12]}:{stamp[12:]}+08:00",
            "payer": {"openid": order.customer.openid},
            "amount": {"total": order.pay_fen, "payer_total": order.pay_fen, "currency": "CNY"},
        }
        note = pay_v3_trades.notice("", "TRANSACTION.SUCCESS", "支付成功", "transaction", resource)
        notices.append((note["body"].encode(), {k: v for k, v in note["headers"].items() if k != "Content-Type"}))
    return notices
