"""Printing tests: the sandbox's printer and waybill emulator (wechat_sandbox/printing.py) in
the session's sandbox, and a paid goods order."""

import pytest

from apps.printing.models import Printer


@pytest.fixture
def printing(wechat, settings):
    """The session's sandbox, reset, serving the printer and the waybills; ``printing.prints()``
    and ``printing.waybills()`` read what it recorded."""
    settings.PRINTING_SANDBOX_BASE = wechat.url

    class Sandbox:
        url = wechat.url

        @staticmethod
        def state() -> dict:
            return wechat.state.extras.setdefault("printing", {"prints": [], "waybills": [], "down": False})

        def prints(self) -> list[dict]:
            return list(self.state()["prints"])

        def waybills(self) -> list[dict]:
            return list(self.state()["waybills"])

    return Sandbox()


@pytest.fixture
def printer(db):
    return Printer.objects.create(provider="sandbox", name="前台", sn="SB-001", copies=2, print_on_payment=True)


@pytest.fixture
def paid_goods(paid):
    """A paid goods order (balance) of 2 x 50.00 yuan: the Order row."""
    from apps.orders.models import Order

    order, _ = paid(price_fen=5000, quantity=2)
    return Order.objects.get(order_no=order["order_no"])
