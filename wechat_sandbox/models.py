"""Records kept by the sandbox: users, trades, refunds, notifications, messages.

Money is integer fen; ``*_at`` fields are epoch seconds (rendered in Beijing time on the wire).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import wire

# trade_state values (pay/orderquery)
NOTPAY = "NOTPAY"  # created, not paid (also after the user closed the pay sheet)
USERPAYING = "USERPAYING"  # the user is entering the password
SUCCESS = "SUCCESS"  # paid
REFUND = "REFUND"  # paid, then a refund was submitted ("转入退款")
CLOSED = "CLOSED"  # closed by closeorder
PAYERROR = "PAYERROR"  # the payment failed (bank refused, ...)

TRADE_STATE_DESC = {
    NOTPAY: "订单未支付",
    USERPAYING: "用户支付中",
    SUCCESS: "支付成功",
    REFUND: "转入退款",
    CLOSED: "已关闭",
    PAYERROR: "支付失败(其他原因，如银行返回失败)",
}

# refund_status values
R_PROCESSING = "PROCESSING"
R_SUCCESS = "SUCCESS"
R_CHANGE = "CHANGE"  # refund failed, money stuck: needs manual handling
R_REFUNDCLOSE = "REFUNDCLOSE"  # refund closed: the money stays with the merchant
REFUND_FINAL_STATES = (R_SUCCESS, R_CHANGE, R_REFUNDCLOSE)


@dataclass
class User:
    """A simulated WeChat user of the mini-program."""

    openid: str
    nickname: str = ""
    unionid: str | None = None
    blocked: bool = False  # jscode2session answers 40226
    refuse_messages: bool = False  # subscribe/send answers 43101
    created_at: float = 0.0

    def to_dict(self) -> dict:
        return {
            "openid": self.openid,
            "nickname": self.nickname,
            "unionid": self.unionid,
            "blocked": self.blocked,
            "refuse_messages": self.refuse_messages,
        }


@dataclass
class LoginCode:
    code: str
    openid: str
    expires_at: float
    used: bool = False


@dataclass
class Trade:
    """One out_trade_no of the merchant. ``params`` is the last accepted unifiedorder request."""

    out_trade_no: str
    params: dict
    total_fee: int  # fen
    openid: str
    notify_url: str
    prepay_id: str
    prepay_expires_at: float
    created_at: float
    trade_state: str = NOTPAY
    transaction_id: str | None = None
    time_end: str | None = None  # yyyyMMddHHmmss Beijing
    paid_at: float | None = None
    closed_at: float | None = None
    bank_type: str | None = None
    cash_fee: int | None = None  # fen
    coupon_fee: int = 0  # fen
    coupon_id: str | None = None
    events: list = field(default_factory=list)
    api: str = "v2"  # the Pay API that created it: "v3" trades are notified in v3's JSON (pay_v3_trades.py)

    @property
    def attach(self) -> str | None:
        return self.params.get("attach") or None

    def to_dict(self) -> dict:
        return {
            "out_trade_no": self.out_trade_no,
            "trade_state": self.trade_state,
            "trade_state_desc": TRADE_STATE_DESC[self.trade_state],
            "total_fee": self.total_fee,
            "cash_fee": self.cash_fee,
            "coupon_fee": self.coupon_fee,
            "coupon_id": self.coupon_id,
            "openid": self.openid,
            "body": self.params.get("body"),
            "attach": self.attach,
            "notify_url": self.notify_url,
            "trade_type": self.params.get("trade_type"),
            "prepay_id": self.prepay_id,
            "prepay_expires_at": wire.beijing(self.prepay_expires_at).isoformat(),
            "transaction_id": self.transaction_id,
            "time_end": self.time_end,
            "bank_type": self.bank_type,
            "created_at": wire.beijing(self.created_at).isoformat(),
            "events": list(self.events),
            "params": dict(self.params),
            "api": self.api,
        }


@dataclass
class Refund:
    out_refund_no: str
    refund_id: str
    out_trade_no: str
    transaction_id: str
    total_fee: int  # fen, the order's amount
    refund_fee: int  # fen
    notify_url: str
    refund_account: str
    refund_desc: str
    created_at: float
    settle_at: float  # when PROCESSING turns SUCCESS by itself
    status: str = R_PROCESSING
    success_at: float | None = None
    api: str = "v2"  # "v3": applied for through /v3/refund/domestic/refunds, notified in v3's JSON

    def to_dict(self) -> dict:
        return {
            "out_refund_no": self.out_refund_no,
            "refund_id": self.refund_id,
            "out_trade_no": self.out_trade_no,
            "transaction_id": self.transaction_id,
            "total_fee": self.total_fee,
            "refund_fee": self.refund_fee,
            "refund_status": self.status,
            "notify_url": self.notify_url,
            "refund_desc": self.refund_desc,
            "created_at": wire.beijing(self.created_at).isoformat(),
            "success_time": wire.dashed_time(self.success_at) if self.success_at else None,
        }


@dataclass
class Notification:
    """One notice (payment or refund) and every attempt to deliver it.

    ``body`` is fixed when the notice is created: retries and duplicates send the same bytes.
    """

    id: int
    kind: str  # "payment" or "refund"
    url: str
    body: str
    out_trade_no: str
    out_refund_no: str | None
    created_at: float
    due_at: float  # time.monotonic() of the next scheduled attempt
    duplicate: bool = False  # each round goes out twice at once (fault)
    attempts: list = field(default_factory=list)
    failed_rounds: int = 0
    acknowledged: bool = False
    gave_up: bool = False
    in_flight: bool = False

    @property
    def status(self) -> str:
        if self.acknowledged:
            return "acknowledged"
        if self.gave_up:
            return "gave_up"
        return "pending"

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "kind": self.kind,
            "url": self.url,
            "out_trade_no": self.out_trade_no,
            "out_refund_no": self.out_refund_no,
            "status": self.status,
            "acknowledged": self.acknowledged,
            "created_at": wire.beijing(self.created_at).isoformat(),
            "attempt_count": len(self.attempts),
            "attempts": [dict(a) for a in self.attempts],
            "body": self.body,
        }


@dataclass
class Message:
    """A subscription message that was accepted (errcode 0)."""

    msgid: int
    touser: str
    template_id: str
    page: str | None
    data: dict
    sent_at: float
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "msgid": self.msgid,
            "touser": self.touser,
            "template_id": self.template_id,
            "page": self.page,
            "data": self.data,
            "sent_at": wire.beijing(self.sent_at).isoformat(),
            **self.extra,
        }


@dataclass
class RobotMessage:
    """A message the enterprise-WeChat group robot accepted (errcode 0; ``robot.py``)."""

    id: int
    key: str
    msgtype: str  # "text" or "markdown"
    content: str
    sent_at: float
    mentions: dict = field(default_factory=dict)  # text only: mentioned_list, mentioned_mobile_list

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "key": self.key,
            "msgtype": self.msgtype,
            "content": self.content,
            "sent_at": wire.beijing(self.sent_at).isoformat(),
            **self.mentions,
        }
