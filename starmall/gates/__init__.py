"""ASGI gates: requests answered in front of Django, only where Django would answer the same.

``starmall/asgi.py`` wraps the shop's HTTP application in :class:`orders.OrderGate` (a 秒杀's
confirms and creates) and :class:`payment_notify.PaymentNotifyGate` (WeChat Pay's notifications).
What each answers, and the test that holds it equal to Django's answer: docs/GATES.md.
"""
