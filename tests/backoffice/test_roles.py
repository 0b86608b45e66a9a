"""Roles are groups made by a data migration, each holding the named permissions of its staff task."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from apps.backoffice.roles import ROLES, sync_roles

pytestmark = pytest.mark.django_db


def _perms(group: str) -> set[str]:
    return {f"{p.content_type.app_label}.{p.codename}" for p in Group.objects.get(name=group).permissions.all()}


def test_the_migration_made_the_roles():
    assert set(Group.objects.filter(name__in=ROLES).values_list("name", flat=True)) == {
        "运营",
        "客服",
        "财务",
        "老师",
        "门店店员",
        "公众号",
    }
    ops, service, finance, teacher = _perms("运营"), _perms("客服"), _perms("财务"), _perms("老师")
    assert {
        "catalog.change_stock",
        "orders.ship_order",
        "marketing.manage_flashsale",
        "orders.view_order",
        "orders.view_orderline",
        "orders.view_shipment",
    } <= ops  # what to pack, and what was sent
    assert "orders.decide_aftersale" not in ops and "backoffice.export_data" not in ops
    assert {"orders.view_order", "orders.view_aftersale"} <= service
    # look, never change — except refunds up to SERVICE_REFUND_LIMIT_FEN (apps/payments/staff_limits.py)
    # and a consultation's attendance (apps/payments/attendance.py, backoffice/0008), and printing
    # an order's ticket (backoffice/0010; a waybill ships, which service may not: orders.ship_order)
    assert {p for p in service if not p.split(".")[1].startswith("view_")} == {
        "orders.approve_small_refund",
        "appointments.mark_attendance",
        "printing.print_order",
    }
    assert "orders.ship_order" not in service and {"printing.print_order", "orders.ship_order"} <= ops
    assert "appointments.mark_attendance" in teacher
    assert {
        "orders.decide_aftersale",
        "payments.resolve_payment",
        "payments.retry_refund",
        "payments.run_reconciliation",
        "payments.batch_refund",
        "backoffice.export_data",
    } <= finance
    assert "payments.batch_refund" not in ops | service | teacher  # the migration 0003_batch_refund_role
    assert {"appointments.view_slot", "appointments.manage_slot"} <= teacher
    assert not {p for p in teacher if not p.startswith(("appointments.", "chat."))}
    sync_roles(Group, Permission)  # the stores app's permissions came after the migration
    store = _perms("门店店员")
    assert "stores.verify_pickup" in store and not {p for p in store if not p.startswith("stores.")}


def test_sync_is_idempotent_and_keeps_hand_granted_permissions():
    extra = Permission.objects.get(codename="view_customer")
    Group.objects.get(name="运营").permissions.add(extra)
    before = sync_roles(Group, Permission)
    assert sync_roles(Group, Permission) == before
    assert "accounts.view_customer" in _perms("运营")


def test_make_run_creates_one_demo_login_per_role(client):
    from apps.catalog.models import Category, Product, Teacher
    from starmall.management.commands.runshop import Command

    category = Category.objects.create(name="咨询预约", kind="consultation")
    first, second = (
        Teacher.objects.create(
            name=name, product=Product.objects.create(category=category, name=f"{name}咨询", kind="consultation")
        )
        for name in ("李明远", "王婉清")
    )

    logins = Command()._role_logins()
    assert [(role, login) for role, login, _ in logins] == [
        ("运营", "ops"),
        ("客服", "service"),
        ("财务", "finance"),
        ("老师", "teacher"),
        ("门店店员", "store"),
        ("公众号", "official"),
    ]
    assert Command()._role_logins() == logins  # once
    for role, login, secret in logins:
        assert client.login(username=login, password=secret)
        user = get_user_model().objects.get(username=login)
        assert user.is_staff and not user.is_superuser
        assert list(user.groups.values_list("name", flat=True)) == [role]
    assert get_user_model().objects.get(username="finance").has_perm("backoffice.export_data")
    assert not get_user_model().objects.get(username="ops").has_perm("backoffice.export_data")
    official = get_user_model().objects.get(username="official")
    assert official.has_perm("wechat_official.send_mass") and official.has_perm("accounts.change_subscribetemplate")
    assert not official.has_perm("orders.view_order") and not get_user_model().objects.get(username="ops").has_perm(
        "wechat_official.send_mass"
    )
    # the demo teacher login is the first teacher's (its slots and chats only), linked once
    teacher_login = get_user_model().objects.get(username="teacher")
    assert list(Teacher.objects.filter(user=teacher_login).values_list("pk", flat=True)) == [first.pk]
    assert Teacher.objects.get(pk=second.pk).user_id is None
