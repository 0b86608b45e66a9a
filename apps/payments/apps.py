from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    verbose_name = "支付与退款"
    name = "apps.payments"
    label = "payments"

    def ready(self):
        """Shipping information to WeChat: a follow-up of every delivered WeChat-paid order; a
        refund's member growth taken back (a follow-up of every refund)."""
        from apps.orders import followups
        from apps.orders.models import FollowUp
        from apps.payments import member_cards, shipping_info

        followups.HANDLERS[FollowUp.Kind.GROWTH_REVOKE] = member_cards.growth_revoke
        followups.SENDS[FollowUp.Kind.SHIPPING_INFO] = shipping_info.followup_send
        followups.RETRY_POLICIES[FollowUp.Kind.SHIPPING_INFO] = shipping_info.RETRY
        if shipping_info.delivered_hook not in followups.DELIVERED:
            followups.DELIVERED.append(shipping_info.delivered_hook)
