"""拼团 groups in the back office: state, members (seats and their orders), and the action that
ends a forming group now (``apps.payments.group_refunds.group_end_by_staff``: the same service
and permission, ``marketing.manage_groupbuy``, as ``manage.py group_end``). It lives here, at
payments' level, because ending a group refunds its paid members."""

from django.contrib import admin, messages

from apps.marketing.models import Group, GroupSeat
from apps.orders.models import Order
from apps.payments import group_refunds
from starmall.admin import Outcome, ReadOnlyModelAdmin, report, require_perm
from starmall.errors import ShopError


class GroupSeatInline(admin.TabularInline):
    model = GroupSeat
    fields = ["customer", "leader", "order_no", "order_status", "units", "status", "created_at", "paid_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="订单状态")
    def order_status(self, seat: GroupSeat) -> str:
        order = Order.objects.filter(order_no=seat.order_no).first()
        return order.get_status_display() if order else "-"


@admin.register(Group)
class GroupAdmin(ReadOnlyModelAdmin):
    list_display = [
        "id",
        "activity",
        "leader",
        "status",
        "members",
        "seats",
        "group_size",
        "expires_at",
        "done_at",
        "failed_at",
        "ended_by",
    ]
    list_filter = ["status", "activity"]
    search_fields = ["leader__nickname", "seats_held__order_no"]
    list_select_related = ["activity", "leader"]
    inlines = [GroupSeatInline]
    actions = ["end_now"]

    def has_end_permission(self, request):
        return request.user.has_perm(group_refunds.MANAGE)

    @admin.action(description="立即结束拼团（按到期处理：未成团则全额退款、取消未付款订单）", permissions=["end"])
    def end_now(self, request, queryset):
        require_perm(request, group_refunds.MANAGE)
        outcomes = []
        for group in queryset.order_by("pk"):
            try:
                outcome = group_refunds.group_end_by_staff(group_id=group.pk, username=request.user.get_username())
            except ShopError as exc:
                outcomes.append(Outcome(f"拼团 #{group.pk}", messages.WARNING, f"未结束：{exc.message}"))
                continue
            text = "已模拟成团" if outcome == "done" else "未成团：已为已付款成员申请全额退款，未付款订单已取消"
            outcomes.append(Outcome(f"拼团 #{group.pk}", messages.SUCCESS, text))
        report(request, "结束拼团", outcomes)
