"""The shipping information reported to WeChat (发货信息), to look at: written only by
``apps.payments.shipping_info``; re-uploads are the order list's action (``apps.backoffice``)."""

from django.contrib import admin

from apps.payments.models import ShippingInfo
from starmall.admin import ReadOnlyModelAdmin


@admin.register(ShippingInfo)
class ShippingInfoAdmin(ReadOnlyModelAdmin):
    list_display = [
        "order",
        "out_trade_no",
        "logistics_type",
        "state",
        "version",
        "uploaded_version",
        "attempts",
        "last_errcode",
        "uploaded_at",
    ]
    list_filter = ["state", "logistics_type"]
    search_fields = ["order__order_no", "out_trade_no"]
    list_select_related = ["order"]
