"""A reply rule keeps only its reply type's fields (and its trigger's keyword / scene): the
required ones checked, the others emptied — the service and the back office's form."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from apps.wechat_official.models import Material, ReplyRule
from apps.wechat_official.rules import reply_rule_clean
from starmall.errors import InvalidInput

ARTICLE = {"title": "十二月新品", "description": "看看", "image": "https://a.cn/1.png", "url": "https://a.cn/news"}


def clean(**given):
    base = dict(
        match="keyword_exact", keyword="价格", scene="s1", reply_kind="text", text="", material=None, articles=[]
    )
    return reply_rule_clean(**(base | given))


def refused(**given) -> dict:
    with pytest.raises(InvalidInput) as caught:
        clean(**given)
    return caught.value.detail["fields"]


@pytest.mark.django_db
def test_each_reply_type_keeps_its_own_field_and_empties_the_others():
    image = Material.objects.create(kind="image", title="图", media_id="m-img")
    out = clean(reply_kind="text", text=" 您好 ", material=image, articles=[ARTICLE])
    assert out == {"keyword": "价格", "scene": "", "text": "您好", "material": None, "articles": []}
    out = clean(reply_kind="image", text="剩下的字", material=image, articles=[ARTICLE])
    assert out == {"keyword": "价格", "scene": "", "text": "", "material": image, "articles": []}
    out = clean(match="scan", reply_kind="news", text="x", material=image, articles=[ARTICLE])
    assert out == {"keyword": "", "scene": "s1", "text": "", "material": None, "articles": [ARTICLE]}


@pytest.mark.django_db
def test_required_fields_of_each_type_in_chinese():
    voice = Material.objects.create(kind="voice", title="声", media_id="")
    image = Material.objects.create(kind="image", title="图", media_id="m-img")
    assert refused(reply_kind="text", text="  ", keyword="") == {
        "keyword": "关键词回复需要填写关键词。",
        "text": "文字回复需要填写文字内容。",
    }
    assert refused(reply_kind="voice", material=image) == {"material": "语音回复需要选择一个语音素材。"}
    assert refused(reply_kind="voice", material=voice) == {
        "material": "该素材还没有上传到微信，请先在「公众号素材」上传。"
    }
    assert refused(reply_kind="news", articles=[]) == {"articles": "图文回复需要 1 到 8 条图文。"}
    assert refused(reply_kind="news", articles=[ARTICLE] * 9) == {"articles": "图文回复需要 1 到 8 条图文。"}
    assert refused(reply_kind="news", articles=[ARTICLE, {"title": "无链接"}]) == {
        "articles": "第 2 条图文需要标题（title）和以 http:// 或 https:// 开头的链接（url）。"
    }
    assert clean(reply_kind="news", articles=[ARTICLE] * 8)["articles"] == [ARTICLE] * 8


@pytest.mark.django_db
def test_admin_form_saves_only_the_chosen_types_fields(client):
    admin = get_user_model().objects.create_superuser("boss", password="pw")
    client.force_login(admin)
    image = Material.objects.create(kind="image", title="图", media_id="m-img")
    form = {
        "name": "欢迎",
        "match": "follow",
        "keyword": "残留",
        "scene": "",
        "reply_kind": "image",
        "text": "残留的文字",
        "material": str(image.pk),
        "articles": '[{"title": "残留"}]',
        "priority": "0",
        "is_active": "on",
    }
    response = client.post("/admin/wechat_official/replyrule/add/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    rule = ReplyRule.objects.get()
    assert (rule.keyword, rule.text, rule.material_id, rule.articles) == ("", "", image.pk, [])
    response = client.post(
        f"/admin/wechat_official/replyrule/{rule.pk}/change/", form | {"reply_kind": "text", "text": ""}
    )
    assert response.status_code == 200
    assert "文字回复需要填写文字内容。" in response.content.decode()
    assert ReplyRule.objects.get().reply_kind == "image"
