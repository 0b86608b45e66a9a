"""The back office's own rows: the named permissions of its pages (exports, calendars)."""

from django.db import models


class BackOffice(models.Model):
    """No table: carries the back office's named permissions (``backoffice.export_data``...)."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "后台"
        verbose_name_plural = "后台"
        permissions = [
            ("export_data", "可以导出订单、退款、支付和对账数据（CSV / Excel）"),
            ("view_dashboard", "可以查看工作台的经营数据"),
            ("view_revenue", "可以查看工作台的销售额、客单价和退款金额"),
        ]

    def __str__(self) -> str:
        return "后台"
