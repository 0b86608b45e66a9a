"""Menus pushed, materials uploaded and listed, mass sends as jobs of batches sent once — all
against the sandbox's official-account APIs, which record what they got."""

from __future__ import annotations

import datetime as dt

import pytest
import requests
from django.core.files.base import ContentFile
from django.utils import timezone

from apps.wechat_official import services
from apps.wechat_official.models import Follower, MassSend, MassSendBatch, Material, Menu
from starmall.errors import InvalidInput, InvalidState


@pytest.fixture
def sandbox(wechat, settings):
    settings.WECHAT_OFFICIAL_API_BASE = wechat.url

    class Sandbox:
        def records(self):
            return requests.get(f"{wechat.url}sandbox/official", timeout=5).json()

    return Sandbox()


def test_menu_push_reaches_wechat(sandbox, db):
    buttons = [
        {
            "name": "商城",
            "type": "miniprogram",
            "appid": "wx8d5f3c1a2b4e6f70",
            "pagepath": "pages/index",
            "url": "https://example.com",
        },
        {"name": "更多", "sub_button": [{"name": "价格", "type": "click", "key": "价格"}]},
    ]
    menu = Menu.objects.create(name="十二月", buttons=buttons)
    pushed = services.menu_push(menu_id=menu.pk)
    assert pushed.pushed_at is not None and pushed.last_error == ""
    assert [m["button"] for m in sandbox.records()["menus"]] == [buttons]


def test_menu_with_four_buttons_is_refused_before_wechat(sandbox, db):
    menu = Menu.objects.create(name="太多", buttons=[{"name": str(i), "type": "click", "key": "k"} for i in range(4)])
    with pytest.raises(InvalidInput):
        services.menu_push(menu_id=menu.pk)
    assert sandbox.records()["menus"] == []


def test_materials_upload_image_voice_news_and_sync_the_list(sandbox, db):
    image = Material.objects.create(kind="image", title="封面")
    image.file.save("cover.png", ContentFile(b"\x89PNG fake image bytes"), save=True)
    image = services.material_upload(material_id=image.pk)
    assert image.media_id and image.url.startswith("http://mmbiz.qpic.cn/")
    with pytest.raises(InvalidState):  # uploaded once
        services.material_upload(material_id=image.pk)
    news = Material.objects.create(
        kind="news", title="新品", articles=[{"title": "新品上架", "content": "<p>正文</p>", "thumb": image.pk}]
    )
    news = services.material_upload(material_id=news.pk)
    recorded = {m["media_id"]: m for m in sandbox.records()["materials"]}
    assert recorded[image.media_id]["type"] == "image"
    assert recorded[news.media_id]["content"]["news_item"][0]["thumb_media_id"] == image.media_id
    # listed: an image uploaded elsewhere appears in the shop after a sync
    Material.objects.filter(pk=image.pk).delete()
    assert services.materials_sync(kind="image") == 1
    assert Material.objects.get(kind="image").media_id == image.media_id


@pytest.fixture
def followers(db):
    return Follower.objects.bulk_create([Follower(openid=f"oF{i:026d}", subscribed=i != 4) for i in range(5)])


def test_mass_send_to_all_followers_in_batches_sent_once_even_when_retried(sandbox, followers, settings):
    settings.OFFICIAL_MASS_BATCH_SIZE = 2
    job = MassSend.objects.create(title="元旦", msg_type="text", text="元旦快乐")
    services.mass_send_start(job_id=job.pk)
    with pytest.raises(InvalidState):
        services.mass_send_start(job_id=job.pk)  # started once
    batches = list(MassSendBatch.objects.filter(job=job))
    assert [b.openids for b in batches] == [[f"oF{0:026d}", f"oF{1:026d}"], [f"oF{2:026d}", f"oF{3:026d}"]]
    for batch in batches:
        assert services.mass_batch_send(batch_id=batch.pk) == "sent"
        assert services.mass_batch_send(batch_id=batch.pk) == "sent"  # a retried task: nothing more
    mass = sandbox.records()["mass"]
    assert len(mass) == 2 and [m["touser"] for m in mass] == [b.openids for b in batches]
    assert sorted(MassSendBatch.objects.values_list("msg_id", flat=True)) == sorted(str(m["msg_id"]) for m in mass)
    job.refresh_from_db()
    assert job.status == "done" and job.finished_at is not None


def test_a_batch_whose_worker_died_after_wechat_took_it_is_not_sent_again(sandbox, followers):
    job = MassSend.objects.create(title="标签", target="tag", tag_id=100, msg_type="text", text="你好")
    services.mass_send_start(job_id=job.pk)
    batch = MassSendBatch.objects.get(job=job)
    assert services.mass_batch_send(batch_id=batch.pk) == "sent"
    # as if the worker died after WeChat accepted and before the row said so
    MassSendBatch.objects.filter(pk=batch.pk).update(
        state="sending", msg_id="", claimed_at=timezone.now() - dt.timedelta(minutes=11)
    )
    assert services.mass_batches_sweep() == 1
    assert services.mass_batch_send(batch_id=batch.pk) == "sent"  # WeChat: clientmsgid exists (45065)
    mass = sandbox.records()["mass"]
    assert len(mass) == 1 and mass[0]["filter"] == {"is_to_all": False, "tag_id": 100}
    batch.refresh_from_db()
    assert "clientmsgid" in batch.error


def test_mass_send_refused_by_wechat_is_failed_with_its_error(sandbox, followers):
    material = Material.objects.create(kind="image", title="不存在", media_id="NOT_AT_WECHAT")
    job = MassSend.objects.create(title="图", msg_type="image", material=material)
    services.mass_send_start(job_id=job.pk)
    batch = MassSendBatch.objects.get(job=job)
    assert services.mass_batch_send(batch_id=batch.pk) == "failed"
    batch.refresh_from_db()
    assert batch.error.startswith("40007")
    job.refresh_from_db()
    assert job.status == "failed"
