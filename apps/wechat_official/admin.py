"""Back office of the official account (公众号): reply rules, menus (发布到微信), materials
(上传到微信, 同步微信素材列表), mass sends (开始群发, with their batches), followers and the
messages and events WeChat delivered (read-only). Each action calls the same service as a
script would, with the staff member's permission checked again inside it. Beijing time."""

from django.contrib import admin, messages

from apps.wechat_official import services
from apps.wechat_official.admin_forms import MenuForm, ReplyRuleForm
from apps.wechat_official.models import Follower, InboundEvent, MassSend, MassSendBatch, Material, Menu, ReplyRule
from starmall.admin import Outcome, ReadOnlyModelAdmin, report, require_perm
from starmall.admin_display import shanghai
from starmall.errors import ShopError


def _run(request, verb: str, rows, label, call) -> None:
    """Run ``call(row)`` per row; one outcome each (a ShopError's message when refused)."""
    outcomes = []
    for row in rows:
        try:
            text = call(row) or "完成"
            outcomes.append(Outcome(label(row), messages.SUCCESS, text))
        except ShopError as exc:
            outcomes.append(Outcome(label(row), messages.ERROR, exc.message))
    report(request, verb, outcomes)


@admin.register(ReplyRule)
class ReplyRuleAdmin(admin.ModelAdmin):
    form = ReplyRuleForm
    # the browser shows only what the trigger and reply type use (django-unfold's Alpine
    # conditions); ReplyRuleForm decides on the server and empties the rest
    conditional_fields = {
        "keyword": "match == 'keyword_exact' || match == 'keyword_contains'",
        "scene": "match == 'scan'",
        "text": "reply_kind == 'text'",
        "material": "reply_kind == 'image' || reply_kind == 'voice'",
        "articles": "reply_kind == 'news'",
    }
    list_display = ["name", "match", "keyword", "scene", "reply_kind", "priority", "is_active", "updated"]
    list_filter = ["match", "reply_kind", "is_active"]
    search_fields = ["name", "keyword", "scene", "text"]
    autocomplete_fields = ["material"]

    @admin.display(description="更新时间", ordering="updated_at")
    def updated(self, rule: ReplyRule) -> str:
        return shanghai(rule.updated_at)


@admin.register(Menu)
class MenuAdmin(admin.ModelAdmin):
    """The menu editor (``MenuForm``: buttons edited visually, checked by ``menus.menu_clean``),
    saved through ``services.menu_save``; 发布到微信 pushes the newest selected menu."""

    form = MenuForm
    list_display = ["name", "pushed", "last_error", "updated"]
    fields = ["name", "buttons", "pushed", "last_error"]
    readonly_fields = ["pushed", "last_error"]
    actions = ["push"]

    def save_model(self, request, obj, form, change):
        saved = services.menu_save(
            menu_id=obj.pk if change else None, name=obj.name, buttons=obj.buttons, by=request.user
        )
        obj.pk, obj.buttons, obj.updated_at = saved.pk, saved.buttons, saved.updated_at

    @admin.display(description="发布时间", ordering="pushed_at")
    def pushed(self, menu: Menu) -> str:
        return shanghai(menu.pushed_at)

    @admin.display(description="更新时间", ordering="updated_at")
    def updated(self, menu: Menu) -> str:
        return shanghai(menu.updated_at)

    def has_push_permission(self, request):
        return request.user.has_perm("wechat_official.push_menu")

    @admin.action(description="发布到微信（替换当前菜单）", permissions=["push"])
    def push(self, request, queryset):
        require_perm(request, "wechat_official.push_menu")
        _run(
            request,
            "发布菜单",
            queryset.order_by("-updated_at")[:1],
            lambda m: m.name,
            lambda m: services.menu_push(menu_id=m.pk, by=request.user) and "已发布",
        )


@admin.register(Material)
class MaterialAdmin(admin.ModelAdmin):
    list_display = ["title", "kind", "media_id", "uploaded", "last_error"]
    list_filter = ["kind"]
    search_fields = ["title", "media_id"]
    fields = ["kind", "title", "file", "articles", "media_id", "url", "uploaded", "last_error"]
    readonly_fields = ["media_id", "url", "uploaded", "last_error"]
    actions = ["upload", "sync"]

    @admin.display(description="上传时间", ordering="uploaded_at")
    def uploaded(self, material: Material) -> str:
        return shanghai(material.uploaded_at)

    def has_upload_permission(self, request):
        return request.user.has_perm("wechat_official.upload_material")

    @admin.action(description="上传到微信（永久素材）", permissions=["upload"])
    def upload(self, request, queryset):
        require_perm(request, "wechat_official.upload_material")
        # images first: news articles use uploaded images as covers
        rows = sorted(queryset, key=lambda m: (m.kind == Material.Kind.NEWS, m.pk))
        _run(
            request,
            "上传素材",
            rows,
            str,
            lambda m: f"media_id {services.material_upload(material_id=m.pk, by=request.user).media_id}",
        )

    @admin.action(description="同步微信素材列表（图片、语音、图文）", permissions=["upload"])
    def sync(self, request, queryset):
        require_perm(request, "wechat_official.upload_material")
        _run(
            request,
            "同步素材",
            ["image", "voice", "news"],
            lambda kind: Material.Kind(kind).label,
            lambda kind: f"新增 {services.materials_sync(kind=kind, by=request.user)} 个",
        )


class MassSendBatchInline(admin.TabularInline):
    model = MassSendBatch
    extra = 0
    can_delete = False
    fields = ["index", "recipients", "state", "msg_id", "sent", "error"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="人数")
    def recipients(self, batch: MassSendBatch) -> str:
        return str(len(batch.openids)) if batch.openids else "全部/标签"

    @admin.display(description="发送时间")
    def sent(self, batch: MassSendBatch) -> str:
        return shanghai(batch.sent_at)


@admin.register(MassSend)
class MassSendAdmin(admin.ModelAdmin):
    list_display = ["title", "target", "tag_id", "msg_type", "status", "created_by", "started", "finished"]
    list_filter = ["status", "target", "msg_type"]
    fields = [
        "title",
        "target",
        "tag_id",
        "msg_type",
        "text",
        "material",
        "status",
        "created_by",
        "started",
        "finished",
    ]
    readonly_fields = ["status", "created_by", "started", "finished"]
    autocomplete_fields = ["material"]
    inlines = [MassSendBatchInline]
    actions = ["start"]

    @admin.display(description="开始时间", ordering="started_at")
    def started(self, job: MassSend) -> str:
        return shanghai(job.started_at)

    @admin.display(description="完成时间", ordering="finished_at")
    def finished(self, job: MassSend) -> str:
        return shanghai(job.finished_at)

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user.get_username()
        super().save_model(request, obj, form, change)

    def has_change_permission(self, request, obj=None):
        if obj is not None and obj.status != MassSend.Status.DRAFT:
            return False  # a started job is a record: its batches say what was sent
        return super().has_change_permission(request, obj)

    def has_start_permission(self, request):
        return request.user.has_perm("wechat_official.send_mass")

    @admin.action(description="开始群发（每批只发送一次）", permissions=["start"])
    def start(self, request, queryset):
        require_perm(request, "wechat_official.send_mass")
        _run(
            request,
            "开始群发",
            queryset.order_by("pk"),
            lambda j: j.title,
            lambda j: (
                f"已生成 {services.mass_send_start(job_id=j.pk, by=request.user).batches.count()} 个批次，后台发送中"
            ),
        )


@admin.register(Follower)
class FollowerAdmin(ReadOnlyModelAdmin):
    list_display = ["openid", "subscribed", "scene", "subscribed_time", "unsubscribed_time"]
    list_filter = ["subscribed"]
    search_fields = ["openid", "scene"]

    @admin.display(description="关注时间", ordering="subscribed_at")
    def subscribed_time(self, follower: Follower) -> str:
        return shanghai(follower.subscribed_at)

    @admin.display(description="取消关注时间", ordering="unsubscribed_at")
    def unsubscribed_time(self, follower: Follower) -> str:
        return shanghai(follower.unsubscribed_at)


@admin.register(InboundEvent)
class InboundEventAdmin(ReadOnlyModelAdmin):
    list_display = [
        "received",
        "openid",
        "msg_type",
        "event",
        "scene",
        "content",
        "reply_rule",
        "channel_counted",
        "encrypted",
    ]
    list_filter = ["msg_type", "event", "encrypted", "channel_counted"]
    search_fields = ["openid", "scene", "content", "event_key"]

    @admin.display(description="收到时间", ordering="created_at")
    def received(self, event: InboundEvent) -> str:
        return shanghai(event.created_at)
