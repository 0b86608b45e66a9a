"""Customer tags (标签): staff tag customers by hand, or a tag's rule tags them
(``apps.members.tags``; the rules are evaluated over orders by ``apps.crm.tag_rules``)."""

from django.db import models
from django.db.models import Q


class Tag(models.Model):
    """A label on customers. ``rule`` MANUAL: only staff tag; SPENT_OVER: customers whose paid,
    not refunded orders of the last ``rule_days`` days sum to at least ``rule_spent_fen`` fen of
    ``pay_fen``; BOUGHT_PRODUCT: customers with a paid, not refunded order of ``rule_product``
    (within ``rule_days`` days when set, else ever). A rule keeps its tag equal to its matches
    (rule-made rows come and go); rows staff added by hand stay until staff remove them."""

    class Rule(models.TextChoices):
        MANUAL = "manual", "手动打标签"
        SPENT_OVER = "spent_over", "近 N 天消费满 X 元"
        BOUGHT_PRODUCT = "bought_product", "买过指定商品"

    name = models.CharField(verbose_name="名称", max_length=32, unique=True)
    rule = models.CharField(verbose_name="规则", max_length=16, choices=Rule.choices, default=Rule.MANUAL)
    rule_spent_fen = models.PositiveBigIntegerField(
        verbose_name="消费满", null=True, blank=True, help_text="近 N 天实付合计至少多少元"
    )  # fen
    rule_days = models.PositiveIntegerField(
        verbose_name="近 N 天", null=True, blank=True, help_text="统计最近多少天的已支付订单；买过商品规则可空（不限）"
    )
    rule_product = models.ForeignKey(
        "catalog.Product", verbose_name="指定商品", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    is_active = models.BooleanField(verbose_name="启用规则", default=True)  # off: the rule is not evaluated
    evaluated_at = models.DateTimeField(verbose_name="上次按规则更新", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "顾客标签"
        verbose_name_plural = "顾客标签"
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(rule="manual")
                | Q(rule="spent_over", rule_spent_fen__gte=1, rule_days__gte=1)
                | Q(rule="bought_product", rule_product__isnull=False),
                name="tag_rule_terms",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class CustomerTag(models.Model):
    """A customer carries a tag: UNIQUE (customer, tag), so tagging twice (a double click, two
    rule runs at once) leaves one row. ``source``: who put it there."""

    class Source(models.TextChoices):
        MANUAL = "manual", "手动"
        RULE = "rule", "规则"

    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.CASCADE, related_name="customer_tags"
    )
    tag = models.ForeignKey(Tag, verbose_name="标签", on_delete=models.CASCADE, related_name="customer_tags")
    source = models.CharField(verbose_name="来源", max_length=8, choices=Source.choices, default=Source.MANUAL)
    created_at = models.DateTimeField(verbose_name="打标签时间", auto_now_add=True)

    class Meta:
        verbose_name = "顾客的标签"
        verbose_name_plural = "顾客的标签"
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["customer", "tag"], name="customertag_customer_tag_uniq")]
        indexes = [models.Index(fields=["tag", "customer"], name="customertag_tag_customer_idx")]

    def __str__(self) -> str:
        return f"{self.customer_id}: {self.tag_id}"
