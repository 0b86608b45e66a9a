"""The shop's rules: orders, payment and draft lifetimes, caps, points, booking, chat, commissions."""

import environ

env = environ.Env()

# --- Shop rules -----------------------------------------------------------------------------
ORDER_PAY_TIMEOUT_MINUTES = env.int("ORDER_PAY_TIMEOUT_MINUTES", default=30)
ORDER_DRAFT_TTL_SECONDS = env.int("ORDER_DRAFT_TTL_SECONDS", default=3600)
# Order threads per web worker process, where the gate calls order_confirm and orders_create
# itself (starmall/gates/threads.py), each with its own database connection; 0 turns that path
# off: Django answers every confirm Redis cannot and creates every order. 2: fewer threads batch
# more creates per transaction and wait less for the GIL; measured against 1 and 8 (docs/PERFORMANCE.md).
CREATE_GATE_CONNECTIONS = env.int("CREATE_GATE_CONNECTIONS", default=2)
# PostgreSQL connections per web worker process for queuing a payment result's first delivery
# before Django (apps/payments/notify_queue.py); 0 turns that off: Django applies it in the request.
NOTIFY_GATE_CONNECTIONS = env.int("NOTIFY_GATE_CONNECTIONS", default=2)
POINT_VALUE_FEN = env.int("POINT_VALUE_FEN", default=1)  # fen one point is worth
# Minutes a recharge (top-up) can be paid; sent to WeChat as time_expire (apps/payments/recharges.py).
RECHARGE_PAY_MINUTES = env.int("RECHARGE_PAY_MINUTES", default=30)
# Full refunds of paid consultations whose slot is more than this many hours away are
# approved without staff (0: every refund waits for staff).
REFUND_AUTO_APPROVE_HOURS = env.int("REFUND_AUTO_APPROVE_HOURS", default=24)
# Back-office money limits (apps/payments/staff_limits.py): customer service (客服) approve refund
# requests up to this many fen (20000 = 200.00 yuan), finance (财务) any; operations (运营) 改价
# an unpaid order within this percentage of its goods total either way, finance any.
SERVICE_REFUND_LIMIT_FEN = env.int("SERVICE_REFUND_LIMIT_FEN", default=20000)
OPS_PRICE_CHANGE_PERCENT = env.int("OPS_PRICE_CHANGE_PERCENT", default=10)
SMS_BACKEND = env.str("SMS_BACKEND", default="apps.orders.sms.LogSmsBackend")
# Points an order earns stay frozen until it completes plus this many days (API.md Additions).
POINTS_FREEZE_DAYS = env.int("POINTS_FREEZE_DAYS", default=7)
# Per-customer caps against hoarding stock and slots (API.md Additions; 409 limit_exceeded).
MAX_UNPAID_ORDERS = env.int("MAX_UNPAID_ORDERS", default=3)
MAX_UNPAID_CONSULTATIONS = 1
# 砍价: records one customer may help per Shanghai day (API.md "Bargaining").
BARGAIN_HELPS_PER_DAY = env.int("BARGAIN_HELPS_PER_DAY", default=3)
# A slot can be booked (and paid) only until this many minutes before it starts.
BOOKING_MIN_NOTICE_MINUTES = env.int("BOOKING_MIN_NOTICE_MINUTES", default=120)
# A customer waits for at most this many full dates at once (POST /teachers/{id}/waitlist).
WAITLIST_MAX_WAITING = env.int("WAITLIST_MAX_WAITING", default=3)
SLOT_HOURS = (9, 11, 13, 15, 17, 19)  # start hours, Shanghai time (DESIGN.md flow 9)
SLOT_LENGTH_MINUTES = 60
SLOT_DAYS_AHEAD = 8
# Consultations: chat messages per user per minute (socket and HTTP; else 429 /
# an error frame); an offline side gets one "new message" notice per quiet period.
CHAT_MESSAGES_PER_MINUTE = env.int("CHAT_MESSAGES_PER_MINUTE", default=20)
CHAT_NOTICE_QUIET_MINUTES = env.int("CHAT_NOTICE_QUIET_MINUTES", default=10)
# Reminders (subscription messages) this many hours before each booked slot, once each.
try:
    REMINDER_HOURS = sorted({int(h) for h in env.list("REMINDER_HOURS", default=["24", "1"]) if str(h).strip()})
except ValueError:
    REMINDER_HOURS = [0]  # refused by _check with a clear message
# A paid consultation can be moved to another slot until this many hours before the old one.
RESCHEDULE_MIN_NOTICE_HOURS = env.int("RESCHEDULE_MIN_NOTICE_HOURS", default=24)
RESCHEDULE_MAX = env.int("RESCHEDULE_MAX", default=2)  # moves per consultation (API.md "Booking")
# The cancellation policy of a paid consultation (API.md "Booking"): a refund asked at least
# CANCEL_FULL_REFUND_HOURS before the start is approved in full; later, before the start, for
# LATE_CANCEL_REFUND_PERCENT % of pay_fen.
CANCEL_FULL_REFUND_HOURS = env.int("CANCEL_FULL_REFUND_HOURS", default=24)
LATE_CANCEL_REFUND_PERCENT = env.int("LATE_CANCEL_REFUND_PERCENT", default=50)


# --- Distribution (分销): commissions, withdrawals, WeChat Pay API v3 merchant transfers -------
# A commission becomes available this many days after its order completed (API.md).
COMMISSION_FREEZE_DAYS = env.int("COMMISSION_FREEZE_DAYS", default=7)
WITHDRAW_MIN_FEN = env.int("WITHDRAW_MIN_FEN", default=100)  # fen
# A transfer WeChat has not finished after this many hours raises an alert (apps.alerts).
TRANSFER_STUCK_HOURS = env.int("TRANSFER_STUCK_HOURS", default=24)
