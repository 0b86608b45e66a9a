from django.core.management.base import BaseCommand

from apps.members.models_tags import Tag


class Command(BaseCommand):
    help = (
        "Demo customer tags: 高消费 (paid at least 500 yuan in the last 30 days, a rule) and 重点客户 "
        "(by hand); the rule is evaluated at once. Only when the shop has no tags."
    )

    def handle(self, *args, **options):
        if Tag.objects.exists():
            self.stdout.write("demo data: tags exist, nothing added")
            return
        from apps.crm import tag_rules

        spender = Tag.objects.create(name="高消费", rule=Tag.Rule.SPENT_OVER, rule_spent_fen=50000, rule_days=30)
        Tag.objects.create(name="重点客户")
        added, _removed = tag_rules.tag_rule_apply(tag_id=spender.pk)
        self.stdout.write(f"demo data: tags 高消费 (rule, {added} customers) and 重点客户 (by hand)")
