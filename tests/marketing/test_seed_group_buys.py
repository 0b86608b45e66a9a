"""Demo data: a live 2-person 拼团 and a live 砍价 on goods SKUs with stock, found through the
public lists; seeding twice adds nothing."""

import pytest
from django.core.management import call_command

from apps.marketing.models import BargainCampaign, GroupBuy

pytestmark = pytest.mark.django_db


def test_seed_demo_has_a_live_group_buy_and_bargain(make_api):
    call_command("seed_demo", stdout=open("/dev/null", "w"))
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # again: nothing more
    assert GroupBuy.objects.count() == 1 and BargainCampaign.objects.count() == 1
    anonymous = make_api(None)
    [group_buy] = anonymous.get("/api/v1/group-buys?status=live").json()
    assert group_buy["group_size"] == 2 and group_buy["stock"] > 0
    assert group_buy["price_fen"] < group_buy["original_price_fen"]
    [bargain] = anonymous.get("/api/v1/bargains?status=live").json()
    assert bargain["stock"] > 0 and bargain["floor_price_fen"] < bargain["original_price_fen"]
    assert anonymous.get(f"/api/v1/group-buys/{group_buy['id']}/groups").json() == []
