"""The two providers' signatures against vectors computed from their documented formulas, and
the ticket's layout on 58 mm paper (32 cells, CJK double)."""

import pytest

from apps.orders.models import Order
from apps.printing import providers, tickets
from starmall.admin_display import specs_text
from wechat_sandbox import printing as sandbox_printing


def test_feie_sig_is_sha1_of_user_ukey_stime_lowercase():
    # sha1("demo@feieyun.com" + "AbCdEfGh1234567" + "1700000000"), computed with sha1sum
    vector = "f6126a39100c155d96c00439a9a44d2cdd315070"
    assert providers.feie_sig("demo@feieyun.com", "AbCdEfGh1234567", "1700000000") == vector
    assert sandbox_printing.feie_sig("demo@feieyun.com", "AbCdEfGh1234567", "1700000000") == vector
    assert providers.feie_sig("demo@feieyun.com", "AbCdEfGh1234567", "1700000001") != vector


def test_kuaidi100_sign_is_md5_of_param_t_key_secret_uppercase():
    # md5('{"kuaidicom":"zhongtong","count":1}' + "1576123932000" + "KEY123" + "SECRET456"), with md5sum
    param = '{"kuaidicom":"zhongtong","count":1}'
    vector = "7270266BA9D4EEB46FB05795F5027954"
    assert providers.kuaidi100_sign(param, "1576123932000", "KEY123", "SECRET456") == vector
    assert sandbox_printing.kuaidi100_sign(param, "1576123932000", "KEY123", "SECRET456") == vector


def test_cells_count_cjk_and_fullwidth_double():
    assert tickets.cells("abc") == 3
    assert tickets.cells("青瓷盖碗") == 8
    assert tickets.cells("，（x）") == 7
    assert tickets.wrap("青" * 20) == ["青" * 16, "青" * 4]
    assert tickets.pair("实付", "128.00") == "实付" + " " * 22 + "128.00"


@pytest.mark.django_db
def test_ticket_fits_58mm_and_says_what_was_bought(paid_goods):
    from apps.orders.models import OrderLine

    line = OrderLine.objects.get(order=paid_goods)
    OrderLine.objects.filter(pk=line.pk).update(
        name="手工青瓷盖碗茶具套装（送礼佳品）景德镇出品", specs={"颜色": "天青", "容量": "120ml"}
    )
    Order.objects.filter(pk=paid_goods.pk).update(remark="请在下午送达，谢谢！The gate code is 1234.")
    order = Order.objects.get(pk=paid_goods.pk)
    content = tickets.ticket_render(order)
    lines = tickets.ticket_lines(content)
    assert max(width for _, width in lines) <= tickets.WIDTH
    texts = [text for text, _ in lines]
    assert texts[0] == "星商城"  # shop name, <CB> (doubled: 12 cells)
    assert lines[0][1] == 12 and content.startswith("<CB>星商城</CB><BR>")
    assert f"订单号：{order.order_no}" in texts
    shanghai = order.paid_at.astimezone(__import__("zoneinfo").ZoneInfo("Asia/Shanghai"))
    assert f"时间：{shanghai:%Y-%m-%d %H:%M:%S}" in texts
    joined = "".join(texts)
    specs = specs_text(OrderLine.objects.get(pk=line.pk).specs)  # PostgreSQL's jsonb orders the keys
    assert sorted(specs.split("；")) == ["容量：120ml", "颜色：天青"]
    assert f"手工青瓷盖碗茶具套装（送礼佳品）景德镇出品（{specs}）" in joined.replace(" ", "")
    assert tickets.pair("", "50.00 x2  100.00") in texts  # price, quantity, amount in yuan from fen
    assert tickets.pair("实付", "100.00") in texts
    assert "收货：张三 13800001234" in joined and "文三路100号" in joined
    assert "备注：请在下午送达，谢谢！" in joined


def test_clip_never_splits_past_width():
    assert tickets.cells(tickets.clip("星" * 40, 16)) == 16
    assert tickets.clip("ab星", 3) == "ab"


def test_the_sandbox_accounts_are_one_and_public():
    from starmall import public_secrets

    assert (providers.SANDBOX_FEIE_USER, providers.SANDBOX_FEIE_UKEY) == (
        sandbox_printing.FEIE_USER,
        sandbox_printing.FEIE_UKEY,
    )
    assert (providers.SANDBOX_WAYBILL_KEY, providers.SANDBOX_WAYBILL_SECRET) == (
        sandbox_printing.WAYBILL_KEY,
        sandbox_printing.WAYBILL_SECRET,
    )
    for setting, value in [
        ("PRINTER_FEIE_USER_KEY", sandbox_printing.FEIE_UKEY),
        ("WAYBILL_KEY", sandbox_printing.WAYBILL_KEY),
        ("WAYBILL_SECRET", sandbox_printing.WAYBILL_SECRET),
    ]:
        assert [r.setting for r in public_secrets.refusals({setting: value})] == [setting]


@pytest.mark.django_db
def test_customer_text_cannot_carry_printer_markup(paid_goods):
    Order.objects.filter(pk=paid_goods.pk).update(remark="<CUT><QR>http://x.cn</QR><BR>")
    content = tickets.ticket_render(Order.objects.get(pk=paid_goods.pk))
    assert "<CUT>" not in content and "<QR>" not in content
    assert "＜CUT＞＜QR＞http://x.cn＜/QR＞" in content.replace("<BR>", "")
    assert max(width for _, width in tickets.ticket_lines(content)) <= tickets.WIDTH
