from django.apps import AppConfig


class PointsMallConfig(AppConfig):
    """积分商城: items customers exchange points for (goods: a paid 0-fen order; coupons).
    Above orders (an exchange makes an order through the order services), beside payments."""

    name = "apps.points_mall"
    label = "points_mall"
    verbose_name = "积分商城"
