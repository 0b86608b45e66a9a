"""The periodic jobs: beat's schedule and the sweeps' intervals (docs/DEPLOY.md §8).

A sweep makes the database, not the broker, the source of truth: each job is idempotent and
safe to run twice at once.
"""

import environ
from celery.schedules import crontab

env = environ.Env()

# Seconds between the sweeps that make the database, not the broker, the source of truth
# (unpaid timeouts, refunds, uncertain payments; follow-ups at twice this). Tests shorten it.
BEAT_SWEEP_SECONDS = env.int("BEAT_SWEEP_SECONDS", default=60)
# The unpaid timeout has no per-order countdown message: an order's pay_deadline is its timer
# and this sweep (an indexed query on status, pay_deadline) cancels what is due, at most this
# many seconds late; WeChat refuses the payment itself after time_expire.
ORDER_EXPIRE_SWEEP_SECONDS = env.int("ORDER_EXPIRE_SWEEP_SECONDS", default=min(15, BEAT_SWEEP_SECONDS))
# Re-sent WeChat payment notifications the ASGI gate answered wait in Redis for their audit rows
# (apps/payments/notify_duplicates.py); this writes them, at most this many seconds late.
NOTIFY_DUPLICATES_FLUSH_SECONDS = env.int("NOTIFY_DUPLICATES_FLUSH_SECONDS", default=min(15, BEAT_SWEEP_SECONDS))
# A payment result's first delivery the gate queued (apps/payments/notify_queue.py) is applied by
# the worker at once; this applies the ones whose task was lost (Redis down, a worker killed).
NOTIFY_QUEUE_SWEEP_SECONDS = env.int("NOTIFY_QUEUE_SWEEP_SECONDS", default=min(15, BEAT_SWEEP_SECONDS))
# 秒杀: the Redis quotas loaded before a sale starts and reconciled with PostgreSQL while it runs;
# reservations whose draft expired unused give their units back (apps/orders/flash_reservations.py).
FLASH_QUOTA_SWEEP_SECONDS = env.int("FLASH_QUOTA_SWEEP_SECONDS", default=min(30, BEAT_SWEEP_SECONDS))
CELERY_BEAT_SCHEDULE = {
    "slots-generate": {
        "task": "apps.appointments.tasks.slots_generate",
        "schedule": 8 * 3600,
    },
    "waitlist-sweep": {  # a freed start on a waited-for date is announced within a sweep
        "task": "apps.appointments.tasks.waitlist_sweep",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "orders-expire-unpaid": {
        "task": "apps.orders.tasks.orders_expire_due",
        "schedule": ORDER_EXPIRE_SWEEP_SECONDS,
    },
    "orders-complete-consultations": {
        "task": "apps.orders.tasks.orders_complete_consultations",
        "schedule": 3600,
    },
    "refunds-sweep": {
        "task": "apps.payments.tasks.refunds_sweep",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "refund-batches-sweep": {
        "task": "apps.payments.tasks.refund_batches_sweep",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "payments-check-uncertain": {
        "task": "apps.payments.tasks.payments_check_uncertain",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "payments-reconcile-daily": {
        "task": "apps.payments.tasks.reconcile_daily",
        "schedule": crontab(hour=10, minute=30),
    },
    "shipping-jump-path": {  # set once per shop (a row): within a sweep of the start, then one EXISTS a sweep
        "task": "apps.payments.tasks.shipping_jump_path_ensure",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "followups-redispatch": {
        "task": "apps.orders.tasks.followups_redispatch",
        "schedule": 2 * BEAT_SWEEP_SECONDS,
    },
    "orders-auto-receive": {
        "task": "apps.orders.tasks.orders_auto_receive",
        "schedule": 600,
    },
    # The sold-out gate trusts a token Redis knows: a deactivation whose revocation failed (Redis
    # down) or that bypassed the ORM (SQL) is at most this late (apps/accounts/revocations.py).
    "tokens-revoke-sweep": {
        "task": "apps.accounts.tasks.tokens_revoke_sweep",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "points-release-due": {
        "task": "apps.accounts.tasks.points_release_due",
        "schedule": 600,
    },
    "recharges-expire-due": {
        "task": "apps.payments.tasks.recharges_expire_due",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "card-purchases-expire-due": {
        "task": "apps.payments.tasks.card_purchases_expire_due",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "coupon-issues-redispatch": {
        "task": "apps.marketing.tasks.coupon_issues_redispatch",
        "schedule": 2 * BEAT_SWEEP_SECONDS,
    },
    # Birthday coupons (apps.marketing.gifts): hourly, so a missed run is caught the same day;
    # UNIQUE (template, customer, year) makes every later run of the day give nothing.
    "birthday-gifts-give": {
        "task": "apps.marketing.tasks.birthday_gifts_give",
        "schedule": crontab(minute=5),
    },
    # Customer tags' rules (apps.crm.tag_rules) and coupons issued to a tag (the rows are the outbox).
    "tag-rules-evaluate": {
        "task": "apps.crm.tasks.tag_rules_evaluate",
        "schedule": env.int("TAG_RULES_EVALUATE_SECONDS", default=3600),
    },
    "tag-coupon-issues-redispatch": {
        "task": "apps.crm.tasks.tag_coupon_issues_redispatch",
        "schedule": 2 * BEAT_SWEEP_SECONDS,
    },
    # Print jobs (apps.printing) still pending after a lost push or a dead worker: sent again.
    "print-jobs-redispatch": {
        "task": "apps.printing.tasks.print_jobs_redispatch",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "consultation-reminders": {
        "task": "apps.chat.tasks.consultation_reminders",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "chat-notices-resend": {
        "task": "apps.chat.tasks.chat_notices_resend",
        "schedule": 2 * BEAT_SWEEP_SECONDS,
    },
    "alerts-sweep": {
        "task": "apps.alerts.tasks.alerts_sweep",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    # Article views wait in Redis (one HINCRBY per view) until this adds them to the rows.
    "article-views-flush": {
        "task": "apps.content.tasks.article_views_flush",
        "schedule": env.int("ARTICLE_VIEWS_FLUSH_SECONDS", default=300),
    },
    # 拼团 groups past their deadline fail and their refunds are requested within a minute.
    "groups-end-due": {
        "task": "apps.payments.tasks.groups_end_due",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "bargains-expire-due": {
        "task": "apps.marketing.tasks.bargains_expire_due",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "official-mass-batches-sweep": {
        "task": "apps.wechat_official.tasks.mass_batches_sweep",
        "schedule": 4 * BEAT_SWEEP_SECONDS,
    },
    "commissions-release-due": {
        "task": "apps.distribution.tasks.commissions_release_due",
        "schedule": 600,
    },
    "transfers-sweep": {  # merchant transfers: send new ones, query unknown/unconfirmed ones, alert stuck ones
        "task": "apps.distribution.tasks.transfers_sweep",
        "schedule": BEAT_SWEEP_SECONDS,
    },
    "transfers-reconcile-daily": {  # yesterday's merchant transfers queried and compared, beside the bill
        "task": "apps.distribution.tasks.transfers_reconcile",
        "schedule": crontab(hour=10, minute=40),
    },
    "notify-duplicates-record": {
        "task": "apps.payments.tasks.notify_duplicates_record",
        "schedule": NOTIFY_DUPLICATES_FLUSH_SECONDS,
    },
    "notifications-queued-sweep": {
        "task": "apps.payments.tasks.notifications_queued_sweep",
        "schedule": NOTIFY_QUEUE_SWEEP_SECONDS,
    },
    "day-figures-close": {  # the dashboard's daily figures: yesterday again, and any closed day without its row
        "task": "apps.backoffice.tasks.day_figures_close",
        "schedule": crontab(hour=0, minute=10),
    },
    "flash-quotas-reconcile": {
        "task": "apps.orders.tasks.flash_quotas_reconcile",
        "schedule": FLASH_QUOTA_SWEEP_SECONDS,
    },
}
