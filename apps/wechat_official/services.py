"""Staff's changes to the official account: push a menu, upload materials and list WeChat's,
and mass sends (a job of durable batches, each sent at most once).

Every function here is what the back office's actions call (and a script could): it checks the
staff member's permission (``by``: a Django user; None = the system) and raises ShopError
subclasses with a Chinese message the admin shows.
"""

from __future__ import annotations

import datetime as dt
import logging
from functools import partial

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.wechat_official import menus, wechat
from apps.wechat_official.models import Follower, MassSend, MassSendBatch, Material, Menu
from starmall import dispatch
from starmall.errors import InvalidInput, InvalidState, ShopError, WechatUnavailable

logger = logging.getLogger(__name__)

Batch = MassSendBatch.State
BATCH_STALE_AFTER = dt.timedelta(minutes=10)
_CLIENT_MSG_ID_USED = 45065  # WeChat already took a mass send with this clientmsgid


class Forbidden(ShopError):
    """The staff member lacks the permission (403 ``forbidden``)."""

    code = "forbidden"
    status = 403
    message = "没有权限执行此操作。"


def _require(by, perm: str) -> None:
    if by is not None and not by.has_perm(perm):
        raise Forbidden()


# --- menus ------------------------------------------------------------------------------------


def menu_validate(buttons) -> list[dict]:
    """WeChat's menu rules, checked before the call (``menus.menu_clean``: counts, byte lengths,
    each type's fields); returns the menu as WeChat's ``button`` list. Raises InvalidInput with
    ``detail["fields"]`` (path -> Chinese error)."""
    return menus.menu_clean(buttons)


def menu_save(*, menu_id: int | None, name: str, buttons, by=None) -> Menu:
    """Create (``menu_id`` None) or change a menu: the name and the checked buttons (only each
    type's own fields kept) written in one statement; nothing is sent to WeChat. Raises
    Forbidden (``add_menu`` / ``change_menu``), InvalidInput (``detail["fields"]``)."""
    _require(by, "wechat_official.change_menu" if menu_id else "wechat_official.add_menu")
    name = (name or "").strip()
    if not name:
        raise InvalidInput("请填写菜单名称。", fields={"name": "请填写菜单名称。"})
    cleaned = menus.menu_clean(buttons)
    if menu_id is None:
        return Menu.objects.create(name=name[:64], buttons=cleaned)
    Menu.objects.filter(pk=menu_id).update(name=name[:64], buttons=cleaned, updated_at=timezone.now())
    return Menu.objects.get(pk=menu_id)


def menu_push(*, menu_id: int, by=None) -> Menu:
    """Push the menu to WeChat (``menu/create``): ``pushed_at`` on success, ``last_error`` on a
    refusal (raised as InvalidInput with WeChat's errcode). Raises Forbidden, WechatUnavailable."""
    _require(by, "wechat_official.push_menu")
    menu = Menu.objects.get(pk=menu_id)
    buttons = menu_validate(menu.buttons)
    try:
        wechat.menu_create(buttons)
    except wechat.WechatRefused as exc:
        Menu.objects.filter(pk=menu_id).update(last_error=str(exc)[:1000])
        raise InvalidInput(f"微信拒绝了菜单：{exc}") from exc
    Menu.objects.filter(pk=menu_id).update(pushed_at=timezone.now(), last_error="")
    menu.refresh_from_db()
    return menu


# --- materials ------------------------------------------------------------------------------


def material_upload(*, material_id: int, by=None) -> Material:
    """Upload a permanent material to WeChat once: an image or voice file (``add_material``),
    or news (``add_news``, each article's ``thumb`` = the id of an uploaded image material).
    Refused (InvalidState) when it has a media_id already; a refusal is kept in ``last_error``."""
    _require(by, "wechat_official.upload_material")
    material = Material.objects.get(pk=material_id)
    if material.media_id:
        raise InvalidState("该素材已上传到微信。")
    try:
        if material.kind == Material.Kind.NEWS:
            answer = wechat.material_add_news(_news_articles(material))
        else:
            if not material.file:
                raise InvalidInput("请先选择要上传的文件。", file=["图片或语音文件"])
            with material.file.open("rb") as handle:
                data = handle.read()
            answer = wechat.material_add(material.kind, material.file.name.rsplit("/", 1)[-1], data)
    except wechat.WechatRefused as exc:
        Material.objects.filter(pk=material_id).update(last_error=str(exc)[:1000])
        raise InvalidInput(f"微信拒绝了素材：{exc}") from exc
    Material.objects.filter(pk=material_id, media_id="").update(
        media_id=answer["media_id"], url=answer.get("url", "")[:500], uploaded_at=timezone.now(), last_error=""
    )
    material.refresh_from_db()
    return material


def _news_articles(material: Material) -> list[dict]:
    articles = material.articles or []
    if not isinstance(articles, list) or not 1 <= len(articles) <= 8:
        raise InvalidInput("图文素材应有 1 到 8 篇文章。", articles=["1 到 8 篇"])
    out = []
    for article in articles:
        thumb = Material.objects.filter(pk=article.get("thumb"), kind=Material.Kind.IMAGE).exclude(media_id="").first()
        if thumb is None or not article.get("title") or not article.get("content"):
            raise InvalidInput(
                "每篇文章需要标题、正文和已上传的封面图片素材。",
                articles=["title、content 必填，thumb 为已上传图片素材的 ID"],
            )
        out.append(
            {
                "title": article["title"],
                "thumb_media_id": thumb.media_id,
                "content": article["content"],
                "digest": article.get("digest", ""),
                "content_source_url": article.get("url", ""),
            }
        )
    return out


def materials_sync(*, kind: str, by=None) -> int:
    """List WeChat's permanent materials of ``kind`` (image, voice, news) and record the ones
    the shop does not know yet (uploaded elsewhere); returns how many were added."""
    _require(by, "wechat_official.upload_material")
    known = set(Material.objects.exclude(media_id="").values_list("media_id", flat=True))
    added, offset = 0, 0
    while True:
        page = wechat.material_list(kind, offset, 20)
        items = page.get("item") or []
        for item in items:
            if item.get("media_id") and item["media_id"] not in known:
                news = (item.get("content") or {}).get("news_item") or []
                Material.objects.create(
                    kind=kind,
                    media_id=item["media_id"],
                    url=str(item.get("url") or "")[:500],
                    title=str(item.get("name") or (news[0].get("title") if news else "") or item["media_id"])[:64],
                    articles=news if kind == "news" else [],
                    uploaded_at=timezone.now(),
                )
                known.add(item["media_id"])
                added += 1
        offset += len(items)
        if not items or offset >= int(page.get("total_count") or 0):
            return added


# --- mass sending ---------------------------------------------------------------------------


def _part(job: MassSend) -> dict:
    if job.msg_type == MassSend.MsgType.TEXT:
        if not job.text.strip():
            raise InvalidInput("请填写群发的文字内容。", text=["文字内容不能为空"])
        return {"content": job.text}
    if job.material is None or not job.material.media_id:
        raise InvalidInput("请选择已上传到微信的素材。", material=["图片、语音、图文群发需要已上传的素材"])
    expected = {"image": "image", "voice": "voice", "mpnews": "news"}[job.msg_type]
    if job.material.kind != expected:
        raise InvalidInput("素材类型与消息类型不一致。", material=[f"需要{expected}素材"])
    return {"media_id": job.material.media_id}


def mass_send_start(*, job_id: int, by=None) -> MassSend:
    """Start a draft mass send: ``draft -> sending`` (conditional UPDATE: a second start is
    refused with InvalidState) and its batches written in the same transaction — a tag or a
    shop with one follower: one ``sendall`` batch; all followers: the subscribed followers'
    openids in batches of ``OFFICIAL_MASS_BATCH_SIZE``. Each batch is pushed after commit."""
    _require(by, "wechat_official.send_mass")
    job = MassSend.objects.select_related("material").get(pk=job_id)
    _part(job)  # checked before anything changes
    if job.target == MassSend.Target.TAG and job.tag_id is None:
        raise InvalidInput("请填写标签 ID。", tag_id=["按标签群发需要标签 ID"])
    with transaction.atomic():
        if not MassSend.objects.filter(pk=job_id, status=MassSend.Status.DRAFT).update(
            status=MassSend.Status.SENDING, started_at=timezone.now()
        ):
            raise InvalidState("该群发已开始，不能再次发送。")
        batches = []
        if job.target == MassSend.Target.ALL:
            openids = list(Follower.objects.filter(subscribed=True).order_by("id").values_list("openid", flat=True))
            size = max(2, settings.OFFICIAL_MASS_BATCH_SIZE)
            chunks = [openids[i : i + size] for i in range(0, len(openids), size)]
            if len(chunks) > 1 and len(chunks[-1]) < 2:  # WeChat's list send needs two openids
                chunks[-2] += chunks.pop()
            batches = [
                MassSendBatch(job_id=job_id, index=i, openids=chunk)
                for i, chunk in enumerate(chunks)
                if len(chunk) >= 2
            ]
        if not batches:  # a tag, or fewer than two followers known here: WeChat's sendall
            batches = [MassSendBatch(job_id=job_id, index=0, openids=[])]
        created = MassSendBatch.objects.bulk_create(batches)
        transaction.on_commit(partial(_push_batches, [b.pk for b in created]))
    job.refresh_from_db()
    return job


def _push_batches(batch_ids: list[int]) -> None:
    from apps.wechat_official.tasks import mass_batch_send

    for pk in batch_ids:
        dispatch.push(mass_batch_send, pk)


def mass_batch_send(*, batch_id: int, now: dt.datetime | None = None) -> str:
    """Send one batch at most once; returns its state afterwards.

    Claimed ``pending -> sending`` by a conditional UPDATE (a second delivery of the task, or a
    retry, finds it claimed or sent and calls nothing). WeChat's answer is recorded by the next
    statement: ``sent`` with ``msg_id``; 45065 (WeChat already has this batch's clientmsgid: an
    earlier attempt got through) is ``sent`` too; another refusal ``failed`` with the error; no
    answer (network) back to ``pending`` for the sweep — safe, WeChat refuses the same
    clientmsgid twice. Called with no transaction open.
    """
    now = now or timezone.now()
    if not MassSendBatch.objects.filter(pk=batch_id, state=Batch.PENDING).update(state=Batch.SENDING, claimed_at=now):
        return MassSendBatch.objects.filter(pk=batch_id).values_list("state", flat=True).first() or "missing"
    batch = MassSendBatch.objects.select_related("job__material").get(pk=batch_id)
    job = batch.job
    try:
        answer = wechat.mass_send(
            openids=batch.openids or None,
            tag_id=job.tag_id if job.target == MassSend.Target.TAG else None,
            msg_type=job.msg_type,
            part=_part(job),
            client_msg_id=batch.client_msg_id,
        )
    except wechat.WechatRefused as exc:
        if exc.errcode == _CLIENT_MSG_ID_USED:
            _batch_finish(batch_id, Batch.SENT, error="微信已受理（clientmsgid 重复，未再次发送）")
        else:
            _batch_finish(batch_id, Batch.FAILED, error=str(exc))
    except (WechatUnavailable, InvalidInput) as exc:
        if isinstance(exc, InvalidInput):
            _batch_finish(batch_id, Batch.FAILED, error=exc.message)
        else:
            MassSendBatch.objects.filter(pk=batch_id, state=Batch.SENDING).update(
                state=Batch.PENDING, error=f"微信无应答：{exc.message}"[:1000]
            )
    else:
        _batch_finish(batch_id, Batch.SENT, msg_id=str(answer.get("msg_id") or ""))
    mass_job_settle(job_id=job.pk)
    return MassSendBatch.objects.filter(pk=batch_id).values_list("state", flat=True).get()


def _batch_finish(batch_id: int, state: str, *, msg_id: str = "", error: str = "") -> int:
    return MassSendBatch.objects.filter(pk=batch_id, state=Batch.SENDING).update(
        state=state, msg_id=msg_id, error=error[:1000], sent_at=timezone.now() if state == Batch.SENT else None
    )


def mass_job_settle(*, job_id: int) -> str:
    """``sending -> done`` (every batch sent) or ``failed`` (some failed) once no batch is
    pending or sending; returns the job's status."""
    states = set(MassSendBatch.objects.filter(job_id=job_id).values_list("state", flat=True))
    if states and not states & {Batch.PENDING, Batch.SENDING}:
        status = MassSend.Status.DONE if states == {Batch.SENT} else MassSend.Status.FAILED
        MassSend.objects.filter(pk=job_id, status=MassSend.Status.SENDING).update(
            status=status, finished_at=timezone.now()
        )
    return MassSend.objects.filter(pk=job_id).values_list("status", flat=True).get()


def mass_batches_sweep(*, now: dt.datetime | None = None) -> int:
    """Beat: a batch left ``sending`` by a worker that died (claimed over BATCH_STALE_AFTER ago)
    goes back to ``pending`` — its clientmsgid keeps WeChat from sending it twice — and every
    pending batch is pushed again; returns how many were pushed."""
    now = now or timezone.now()
    MassSendBatch.objects.filter(state=Batch.SENDING, claimed_at__lt=now - BATCH_STALE_AFTER).update(
        state=Batch.PENDING
    )
    ids = list(MassSendBatch.objects.filter(state=Batch.PENDING).values_list("pk", flat=True)[:200])
    _push_batches(ids)
    return len(ids)
