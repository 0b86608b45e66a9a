from django.core.management.base import BaseCommand
from django.db import transaction

from apps.wechat_official.models import Menu, ReplyRule

RULES = [
    dict(
        name="关注欢迎",
        match="follow",
        reply_kind="text",
        text="欢迎关注星商城！点击菜单「商城」进入小程序，回复「咨询」了解老师预约。",
    ),
    dict(
        name="咨询",
        match="keyword_contains",
        keyword="咨询",
        reply_kind="text",
        text="咨询预约请进入小程序「咨询」页面选择老师和时段。",
    ),
    dict(name="默认回复", match="default", reply_kind="text", text="收到，客服会尽快回复您。"),
]
MENU = [
    {
        "name": "商城",
        "type": "miniprogram",
        "url": "https://example.com/",
        "appid": "wx8d5f3c1a2b4e6f70",
        "pagepath": "pages/index/index",
    },
    {"name": "咨询", "type": "click", "key": "咨询"},
]


class Command(BaseCommand):
    help = "Demo official-account reply rules and a menu (not pushed), only into a shop that has none."

    @transaction.atomic
    def handle(self, *args, **options):
        if ReplyRule.objects.exists():
            self.stdout.write("demo data: official-account replies already set up, nothing changed")
            return
        ReplyRule.objects.bulk_create([ReplyRule(**rule) for rule in RULES])
        if not Menu.objects.exists():
            Menu.objects.create(name="默认菜单", buttons=MENU)
        self.stdout.write(f"demo data: {len(RULES)} official-account reply rules and a menu added")
