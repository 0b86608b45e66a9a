"""The shop's own settings row (name and logo), read by every layer through :mod:`starmall.shop`."""

from django.db import models


class ShopProfile(models.Model):
    """One row (pk 1): the shop's name and logo as staff set them in *系统 › 店铺设置*.

    The name is used in the admin's title, customer messages, WeChat Pay's ``body`` and alerts;
    empty means the ``SHOP_NAME`` setting (what a fresh install shows)."""

    name = models.CharField(
        verbose_name="店铺名称",
        max_length=20,
        blank=True,
        help_text="顾客和员工看到的店名：后台标题、短信、微信支付的商品描述、告警；空 = 环境变量 SHOP_NAME",
    )
    logo = models.ImageField(
        verbose_name="店铺标志",
        upload_to="shop/",
        blank=True,
        help_text="后台左上角的标志（方形 PNG / JPG，建议 128×128）",
    )
    updated_at = models.DateTimeField(verbose_name="修改时间", auto_now=True)

    class Meta:
        verbose_name = "店铺设置"
        verbose_name_plural = "店铺设置"

    def __str__(self) -> str:
        return self.name or "店铺设置"
