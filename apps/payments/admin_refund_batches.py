"""Back office of batch refunds (``apps.payments.refund_batches``): the add page (paste order
numbers + a reason), the batch page (per order what happened), counts per status on the list,
retrying failed items. Everything goes through the service and ``payments.batch_refund``; the
order list's action "批量退款" (``apps.backoffice.admin_orders``) leads to the same service."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

from apps.payments import refund_batches
from apps.payments.models import RefundBatch, RefundBatchItem
from starmall.admin import Outcome, report, require_perm
from starmall.errors import ShopError

Status = RefundBatchItem.Status


class RefundBatchForm(forms.ModelForm):
    """The add page: order numbers as pasted, and the reason."""

    order_nos = forms.CharField(
        label="订单号",
        widget=forms.Textarea(attrs={"rows": 8, "cols": 40}),
        help_text=f"每行一个，或用逗号、空格分隔；最多 {refund_batches.MAX_ORDERS} 个。每个订单退还全部可退金额。",
    )

    class Meta:
        model = RefundBatch
        fields = ["reason"]
        help_texts = {"reason": "顾客在退款记录中看到的原因；同一订单以同一原因只会退款一次"}

    def clean_order_nos(self) -> list[str]:
        nos = refund_batches.parse_order_nos(self.cleaned_data["order_nos"])
        if not nos or len(nos) > refund_batches.MAX_ORDERS:
            raise forms.ValidationError(f"请填写 1 到 {refund_batches.MAX_ORDERS} 个订单号（现有 {len(nos)} 个）")
        return nos


class RefundBatchItemInline(admin.TabularInline):
    model = RefundBatchItem
    fields = ["order_link", "amount_fen", "status", "out_refund_no", "refund_status", "note", "attempts", "updated_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["id"]
    hide_title = True  # unfold: no order number above each row (it is the first column)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("refund")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="订单号")
    def order_link(self, item: RefundBatchItem):
        if not item.order_id:
            return item.order_no
        return format_html(
            '<a href="{}">{}</a>', reverse("admin:orders_order_change", args=[item.order_id]), item.order_no
        )

    @admin.display(description="退款单号")
    def out_refund_no(self, item: RefundBatchItem) -> str:
        return item.refund.out_refund_no if item.refund else "-"

    @admin.display(description="退款状态")
    def refund_status(self, item: RefundBatchItem) -> str:
        return item.refund.get_status_display() if item.refund else "-"


def _count_column(status: str):
    """A list column: how many of the batch's items have ``status`` (annotated by with_counts)."""

    def column(self, batch) -> int:
        return getattr(batch, f"n_{status}")

    column.short_description = Status(status).label
    column.admin_order_field = f"n_{status}"
    return column


@admin.register(RefundBatch)
class RefundBatchAdmin(admin.ModelAdmin):
    """BatchQueue are records of what staff asked: created on the add page (or from the order
    list), never edited; each order's progress is on the batch page."""

    form = RefundBatchForm
    inlines = [RefundBatchItemInline]
    list_display = [
        "__str__",
        "created_by",
        "reason",
        "created_at",
        "n_items",
        "queued",
        "refunding",
        "refunded",
        "failed",
        "skipped",
    ]
    list_filter = ["created_at"]
    search_fields = ["reason", "items__order_no"]
    actions = ["retry_failed"]

    def get_queryset(self, request):
        return refund_batches.with_counts(super().get_queryset(request).select_related("created_by"))

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["order_nos", "reason"]
        return ["created_by", "reason", "created_at", "summary"]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else ["created_by", "reason", "created_at", "summary"]

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []

    def has_add_permission(self, request):
        return request.user.has_perm(refund_batches.PERMISSION)

    def has_change_permission(self, request, obj=None):
        return False  # a batch is a record; its items move by the service only

    def has_delete_permission(self, request, obj=None):
        return False

    def has_batch_refund_permission(self, request):
        return request.user.has_perm(refund_batches.PERMISSION)

    @admin.display(description="条目")
    def n_items(self, batch) -> int:
        return batch.n_items

    queued, refunding, refunded, failed, skipped = (_count_column(s) for s in Status.values)

    @admin.display(description="汇总")
    def summary(self, batch) -> str:
        counted = refund_batches.with_counts(RefundBatch.objects.filter(pk=batch.pk)).get()
        return "，".join(f"{label} {getattr(counted, f'n_{value}')}" for value, label in Status.choices)

    def save_model(self, request, obj, form, change):
        """THE service creates the batch (and its items); the page then shows that batch."""
        require_perm(request, refund_batches.PERMISSION)
        try:
            batch = refund_batches.refund_batch_create(
                order_nos=form.cleaned_data["order_nos"], reason=form.cleaned_data["reason"], user=request.user
            )
        except ShopError as exc:
            messages.error(request, exc.message)
            return
        obj.pk, obj.created_by, obj.created_at = batch.pk, batch.created_by, batch.created_at

    def save_related(self, request, form, formsets, change):
        pass  # the items are the service's

    def response_add(self, request, obj, post_url_continue=None):
        if obj.pk is None:
            return HttpResponseRedirect(reverse("admin:payments_refundbatch_add"))
        message_created(request, obj)
        return HttpResponseRedirect(reverse("admin:payments_refundbatch_change", args=[obj.pk]))

    @admin.action(description="重试失败的条目（失败的退款用同一退款单号重试）", permissions=["batch_refund"])
    def retry_failed(self, request, queryset):
        require_perm(request, refund_batches.PERMISSION)
        outcomes = []
        for batch in queryset.order_by("pk"):
            counts = refund_batches.refund_batch_retry_failed(batch_id=batch.pk, user=request.user)
            if counts["refund"] + counts["queued"]:
                outcomes.append(
                    Outcome(
                        str(batch),
                        messages.SUCCESS,
                        f"已重新提交退款 {counts['refund']} 个，重新排队 {counts['queued']} 个",
                    )
                )
            else:
                outcomes.append(Outcome(str(batch), messages.WARNING, "没有失败的条目"))
        report(request, "重试失败的条目", outcomes)


def message_created(request, batch: RefundBatch) -> None:
    """The message after a batch was created (add page and the order list's action)."""
    counted = refund_batches.with_counts(RefundBatch.objects.filter(pk=batch.pk)).get()
    level = messages.SUCCESS if counted.n_queued else messages.WARNING
    messages.add_message(
        request,
        level,
        f"{batch}：{counted.n_queued} 个订单已排队退款，{counted.n_skipped} 个跳过（原因见下表）。刷新本页查看进度。",
    )
