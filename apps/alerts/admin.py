"""Back office for alerts: read-only rows, filters by kind / sending / handling, and one action
"标记已处理" through :func:`apps.alerts.services.alert_resolve` (permission
``alerts.resolve_alert``). Times in Shanghai time. Registered on the shop's admin site."""

from django.contrib import admin, messages

from apps.alerts import services
from apps.alerts.models import Alert, AlertDelivery
from starmall.admin import Outcome, ReadOnlyModelAdmin, report, require_perm
from starmall.admin_display import shanghai


class HandledFilter(admin.SimpleListFilter):
    """``?handled=no``: the alerts nobody marked handled yet (the dashboard's "未处理告警")."""

    title = "处理状态"
    parameter_name = "handled"

    def lookups(self, request, model_admin):
        return [("no", "未处理"), ("yes", "已处理")]

    def queryset(self, request, queryset):
        if self.value() == "no":
            return queryset.filter(resolved_at__isnull=True)
        if self.value() == "yes":
            return queryset.filter(resolved_at__isnull=False)
        return queryset


class AlertDeliveryInline(admin.TabularInline):
    model = AlertDelivery
    extra = 0
    can_delete = False
    fields = ["backend", "delivered", "attempts", "last_attempt", "last_error"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="送达时间")
    def delivered(self, delivery: AlertDelivery) -> str:
        return shanghai(delivery.delivered_at)

    @admin.display(description="最近尝试时间")
    def last_attempt(self, delivery: AlertDelivery) -> str:
        return shanghai(delivery.last_attempt_at)


@admin.register(Alert)
class AlertAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "created", "kind", "title", "status", "attempts", "sent", "resolved", "resolved_by"]
    list_filter = ["kind", "status", HandledFilter]  # status = 发送状态 (sent or not)
    search_fields = ["key", "title", "text"]
    fields = [
        "key",
        "kind",
        "title",
        "text",
        "status",
        "created",
        "sent",
        "attempts",
        "next_attempt",
        "last_error",
        "resolved",
        "resolved_by",
    ]
    readonly_fields = fields
    inlines = [AlertDeliveryInline]
    actions = ["mark_handled"]

    @admin.display(description="发生时间", ordering="created_at")
    def created(self, alert: Alert) -> str:
        return shanghai(alert.created_at)

    @admin.display(description="发送完成时间", ordering="sent_at")
    def sent(self, alert: Alert) -> str:
        return shanghai(alert.sent_at)

    @admin.display(description="下次重试时间")
    def next_attempt(self, alert: Alert) -> str:
        return shanghai(alert.next_attempt_at) if alert.status == Alert.Status.PENDING else "-"

    @admin.display(description="处理时间", ordering="resolved_at")
    def resolved(self, alert: Alert) -> str:
        return shanghai(alert.resolved_at)

    def has_resolve_permission(self, request):
        return request.user.has_perm("alerts.resolve_alert")

    @admin.action(description="标记已处理", permissions=["resolve"])
    def mark_handled(self, request, queryset):
        require_perm(request, "alerts.resolve_alert")
        outcomes = []
        for alert in queryset.order_by("pk"):
            if services.alert_resolve(alert_id=alert.pk, actor=f"staff:{request.user.username}"):
                outcomes.append(Outcome(alert.title, messages.SUCCESS, "已标记为已处理"))
            else:
                alert.refresh_from_db(fields=["resolved_at", "resolved_by"])
                outcomes.append(
                    Outcome(
                        alert.title,
                        messages.WARNING,
                        f"未改动：{shanghai(alert.resolved_at)} 已由 {alert.resolved_by} 处理",
                    )
                )
        report(request, "标记已处理", outcomes)
