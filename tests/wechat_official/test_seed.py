from django.core.management import call_command

from apps.accounts.models import SubscribeTemplate
from apps.wechat_official.models import Menu, ReplyRule


def test_demo_templates_and_replies_are_seeded_once(db, make_api):
    for _ in range(2):
        call_command("seed_subscribe_templates", verbosity=0)
        call_command("seed_official", verbosity=0)
    assert SubscribeTemplate.objects.count() == 5 and ReplyRule.objects.count() == 3 and Menu.objects.count() == 1
    client = make_api()
    for scene, kinds in (("order", 2), ("consultation", 3)):  # consultation: reminder, chat, waitlist_open
        rows = client.get(f"/api/v1/subscribe-templates?scene={scene}").json()
        assert len(rows) == kinds and {r["scene"] for r in rows} == {scene}
