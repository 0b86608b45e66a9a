"""Freight templates (运费模板) and their region rules: what shipping goods to an address costs.

A product is charged by its template (``catalog.Product.freight_template``; none = the shop's
default template). A template charges by piece, weight (grams) or volume (cm³): ``first_fee_fen``
covers the first ``first_unit`` units, each started ``extra_unit`` beyond costs
``extra_fee_fen``. A region rule overrides both fees for some provinces (or only some cities of
them); a free-shipping rule waives freight in its regions once an amount and/or a count of
pieces is reached. How several templates in one order combine:
``apps.shipping.calculator.freight_quote``.
"""

from django.db import models
from django.db.models import Q


class FreightMode(models.TextChoices):
    PIECE = "piece", "按件数"  # units = pieces
    WEIGHT = "weight", "按重量"  # units = grams (Sku.weight_g x quantity)
    VOLUME = "volume", "按体积"  # units = cm³ (Sku.volume_cm3 x quantity)


class FreightTemplate(models.Model):
    """A freight template. Exactly one is the shop's default (``is_default``: a partial UNIQUE
    constraint allows at most one; the admin refuses to leave the shop without one)."""

    name = models.CharField(verbose_name="名称", max_length=64)
    mode = models.CharField(
        verbose_name="计费方式", max_length=16, choices=FreightMode.choices, default=FreightMode.PIECE
    )
    first_unit = models.PositiveIntegerField(
        verbose_name="首件/首重/首体积", default=1
    )  # pieces / grams / cm³ the first fee covers
    first_fee_fen = models.PositiveIntegerField(verbose_name="首费", default=0)  # fen
    extra_unit = models.PositiveIntegerField(
        verbose_name="续件/续重/续体积", default=1
    )  # pieces / grams / cm³ per extra fee
    extra_fee_fen = models.PositiveIntegerField(verbose_name="续费", default=0)  # fen per started extra_unit
    is_default = models.BooleanField(verbose_name="默认模板", default=False)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name="更新时间", auto_now=True)

    class Meta:
        ordering = ["-is_default", "id"]
        verbose_name = "运费模板"
        verbose_name_plural = "运费模板"
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"], condition=Q(is_default=True), name="freight_template_one_default"
            ),
            models.CheckConstraint(
                condition=Q(first_unit__gte=1) & Q(extra_unit__gte=1), name="freight_template_units_gte_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}（默认）" if self.is_default else self.name


class FreightRegionRule(models.Model):
    """Other fees for some provinces (full names, ``apps.shipping.regions``), or with ``cities``
    only for those cities of them. A rule naming the address's city beats one naming only its
    province; among equals the first (lowest id) wins."""

    template = models.ForeignKey(
        FreightTemplate, verbose_name="运费模板", on_delete=models.CASCADE, related_name="region_rules"
    )
    provinces = models.JSONField(verbose_name="省份", default=list)  # ["新疆维吾尔自治区", "西藏自治区"]
    cities = models.JSONField(verbose_name="城市", default=list, blank=True)  # ["深圳"]: empty = the whole provinces
    first_fee_fen = models.PositiveIntegerField(verbose_name="首费")  # fen, instead of the template's
    extra_fee_fen = models.PositiveIntegerField(verbose_name="续费")  # fen, instead of the template's

    class Meta:
        ordering = ["id"]
        verbose_name = "指定区域运费"
        verbose_name_plural = "指定区域运费"

    def __str__(self) -> str:
        return "、".join(self.cities or self.provinces)


class FreeShippingRule(models.Model):
    """No freight for this template's goods in these regions (empty ``provinces`` = everywhere)
    once their amount reaches ``min_amount_fen`` and their pieces ``min_count`` (each when set;
    both when both are set, as the original)."""

    template = models.ForeignKey(
        FreightTemplate, verbose_name="运费模板", on_delete=models.CASCADE, related_name="free_rules"
    )
    provinces = models.JSONField(verbose_name="省份", default=list, blank=True)  # empty = every province
    cities = models.JSONField(verbose_name="城市", default=list, blank=True)  # empty = the whole provinces
    min_amount_fen = models.PositiveIntegerField(
        verbose_name="满金额",
        null=True,
        blank=True,  # fen of goods, before coupons
        help_text="该模板商品金额达到此数包邮",
    )
    min_count = models.PositiveIntegerField(verbose_name="满件数", null=True, blank=True)  # pieces

    class Meta:
        ordering = ["id"]
        verbose_name = "包邮条件"
        verbose_name_plural = "包邮条件"
        constraints = [
            models.CheckConstraint(
                condition=Q(min_amount_fen__isnull=False) | Q(min_count__isnull=False),
                name="free_shipping_rule_has_threshold",
            ),
        ]

    def __str__(self) -> str:
        return "、".join(self.cities or self.provinces) or "全国"
