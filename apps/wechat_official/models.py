"""The official account (公众号) around the shop: followers, the messages and events WeChat
delivered, staff's reply rules, menus, permanent materials and mass sends (jobs and batches)."""

from django.db import models
from django.db.models import Q
from django.utils import timezone


class Follower(models.Model):
    """A WeChat user of the official account (openid under the official account's appid).

    ``subscribed`` follows the latest subscribe/unsubscribe event by ``CreateTime``
    (``last_event_at``: an event older than the row's is not applied, so a late retry cannot
    undo a newer change); ``scene`` is the channel code of a first follow by QR code."""

    openid = models.CharField(verbose_name="微信 openid", max_length=64, unique=True)
    subscribed = models.BooleanField(verbose_name="关注中", default=True)
    subscribed_at = models.DateTimeField(verbose_name="关注时间", null=True, blank=True)
    unsubscribed_at = models.DateTimeField(verbose_name="取消关注时间", null=True, blank=True)
    scene = models.CharField(verbose_name="关注渠道", max_length=64, blank=True)
    tag_ids = models.JSONField(verbose_name="标签", default=list, blank=True)
    last_event_at = models.DateTimeField(verbose_name="最近事件时间", default=timezone.now)
    created_at = models.DateTimeField(verbose_name="首次记录", auto_now_add=True)

    class Meta:
        verbose_name = "公众号粉丝"
        verbose_name_plural = "公众号粉丝"
        ordering = ["-last_event_at"]
        indexes = [models.Index(fields=["id"], condition=Q(subscribed=True), name="follower_subscribed_idx")]

    def __str__(self) -> str:
        return self.openid


class InboundEvent(models.Model):
    """One message or event WeChat delivered to ``/wechat/official``, stored once: WeChat sends
    it again when no answer came within 5 s, and ``dedupe_key`` (MsgId, or openid + CreateTime
    + event) is UNIQUE, so a retry changes nothing twice (followers, channel scans). The
    columns' lengths are what ``/wechat/official`` accepts (``guard.COLUMN_LIMITS``)."""

    dedupe_key = models.CharField(verbose_name="去重键", max_length=160, unique=True)
    openid = models.CharField(verbose_name="微信 openid", max_length=64, db_index=True)
    msg_type = models.CharField(verbose_name="消息类型", max_length=20)
    event = models.CharField(verbose_name="事件", max_length=32, blank=True)
    event_key = models.CharField(verbose_name="事件键", max_length=128, blank=True)
    scene = models.CharField(verbose_name="扫码渠道", max_length=64, blank=True, db_index=True)
    content = models.TextField(verbose_name="内容", max_length=2000, blank=True)
    encrypted = models.BooleanField(verbose_name="安全模式", default=False)
    reply_rule = models.ForeignKey(
        "ReplyRule", verbose_name="回复规则", null=True, blank=True, on_delete=models.SET_NULL
    )
    channel_counted = models.BooleanField(verbose_name="已计入渠道", default=False)
    sent_at = models.DateTimeField(verbose_name="微信时间")
    created_at = models.DateTimeField(verbose_name="收到时间", auto_now_add=True)

    class Meta:
        verbose_name = "公众号消息与事件"
        verbose_name_plural = "公众号消息与事件"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.msg_type} {self.event} {self.openid}"


class Material(models.Model):
    """A permanent material uploaded to WeChat (image, voice, or news built of articles)."""

    class Kind(models.TextChoices):
        IMAGE = "image", "图片"
        VOICE = "voice", "语音"
        NEWS = "news", "图文"

    kind = models.CharField(verbose_name="类型", max_length=10, choices=Kind.choices)
    title = models.CharField(verbose_name="名称", max_length=64)
    file = models.FileField(verbose_name="文件", upload_to="official/materials/", blank=True)
    articles = models.JSONField(
        verbose_name="图文内容",
        default=list,
        blank=True,
        help_text='[{"title", "content", "thumb": 图片素材ID, "digest", "url"}]',
    )
    media_id = models.CharField(verbose_name="微信素材 ID", max_length=128, blank=True)
    url = models.URLField(verbose_name="微信图片地址", max_length=500, blank=True)
    uploaded_at = models.DateTimeField(verbose_name="上传时间", null=True, blank=True)
    last_error = models.TextField(verbose_name="上传错误", blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "公众号素材"
        verbose_name_plural = "公众号素材"
        ordering = ["-created_at"]
        permissions = [("upload_material", "上传公众号素材")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}：{self.title}"


class ReplyRule(models.Model):
    """An automatic reply staff edit. ``match``: exact or contained keyword (text messages and
    menu clicks), a follow, a scan of a channel code (``scene``; empty = any code), or the
    default. The reply is text, an image or voice material, or news (articles with links)."""

    class Match(models.TextChoices):
        KEYWORD_EXACT = "keyword_exact", "关键词（完全匹配）"
        KEYWORD_CONTAINS = "keyword_contains", "关键词（包含）"
        FOLLOW = "follow", "关注"
        SCAN = "scan", "扫码（渠道）"
        DEFAULT = "default", "默认回复"

    class ReplyKind(models.TextChoices):
        TEXT = "text", "文字"
        IMAGE = "image", "图片"
        VOICE = "voice", "语音"
        NEWS = "news", "图文"

    name = models.CharField(verbose_name="名称", max_length=64)
    match = models.CharField(verbose_name="触发方式", max_length=20, choices=Match.choices)
    keyword = models.CharField(verbose_name="关键词", max_length=64, blank=True)
    scene = models.CharField(
        verbose_name="渠道码", max_length=64, blank=True, help_text="扫码规则：渠道二维码的场景值；留空表示任意渠道"
    )
    reply_kind = models.CharField(verbose_name="回复类型", max_length=10, choices=ReplyKind.choices)
    text = models.TextField(verbose_name="文字内容", blank=True)
    material = models.ForeignKey(
        Material,
        verbose_name="素材",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        help_text="图片、语音回复所用的素材",
    )
    articles = models.JSONField(
        verbose_name="图文", default=list, blank=True, help_text='[{"title", "description", "image", "url"}]，最多 8 条'
    )
    priority = models.IntegerField(verbose_name="优先级", default=0, help_text="数值大的先匹配")
    is_active = models.BooleanField(verbose_name="启用", default=True)
    updated_at = models.DateTimeField(verbose_name="更新时间", auto_now=True)

    class Meta:
        verbose_name = "自动回复"
        verbose_name_plural = "自动回复"
        ordering = ["-priority", "id"]

    def __str__(self) -> str:
        return self.name


class Menu(models.Model):
    """The official account's custom menu: ``buttons`` in WeChat's ``menu/create`` shape.
    ``push`` sends it; the last one pushed is the live menu."""

    name = models.CharField(verbose_name="名称", max_length=64)
    buttons = models.JSONField(
        verbose_name="菜单",
        default=list,
        help_text='[{"name", "type": "click"|"view"|"miniprogram", "key"|"url"|"appid"+"pagepath", '
        '"sub_button": [...]}]，最多 3 个一级菜单，每个最多 5 个子菜单',
    )
    pushed_at = models.DateTimeField(verbose_name="发布时间", null=True, blank=True)
    last_error = models.TextField(verbose_name="发布错误", blank=True)
    updated_at = models.DateTimeField(verbose_name="更新时间", auto_now=True)

    class Meta:
        verbose_name = "公众号菜单"
        verbose_name_plural = "公众号菜单"
        ordering = ["-updated_at"]
        permissions = [("push_menu", "发布公众号菜单")]

    def __str__(self) -> str:
        return self.name


class MassSend(models.Model):
    """A mass send to all followers or a tag: a job cut into :class:`MassSendBatch` rows."""

    class Target(models.TextChoices):
        ALL = "all", "全部粉丝"
        TAG = "tag", "标签"

    class MsgType(models.TextChoices):
        TEXT = "text", "文字"
        IMAGE = "image", "图片"
        VOICE = "voice", "语音"
        MPNEWS = "mpnews", "图文"

    class Status(models.TextChoices):
        DRAFT = "draft", "草稿"
        SENDING = "sending", "发送中"
        DONE = "done", "已完成"
        FAILED = "failed", "部分失败"

    title = models.CharField(verbose_name="名称", max_length=64)
    target = models.CharField(verbose_name="发送对象", max_length=10, choices=Target.choices, default=Target.ALL)
    tag_id = models.IntegerField(verbose_name="标签编号", null=True, blank=True)
    msg_type = models.CharField(verbose_name="消息类型", max_length=10, choices=MsgType.choices)
    text = models.TextField(verbose_name="文字内容", blank=True)
    material = models.ForeignKey(Material, verbose_name="素材", null=True, blank=True, on_delete=models.PROTECT)
    status = models.CharField(verbose_name="状态", max_length=10, choices=Status.choices, default=Status.DRAFT)
    created_by = models.CharField(verbose_name="创建人", max_length=150, blank=True)
    started_at = models.DateTimeField(verbose_name="开始时间", null=True, blank=True)
    finished_at = models.DateTimeField(verbose_name="完成时间", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "群发"
        verbose_name_plural = "群发"
        ordering = ["-created_at"]
        permissions = [("send_mass", "发送群发")]

    def __str__(self) -> str:
        return self.title


class MassSendBatch(models.Model):
    """One WeChat call of a mass send: all followers / a tag (``sendall``) or a list of up to
    ``OFFICIAL_MASS_BATCH_SIZE`` openids (``send``). Claimed ``pending -> sending`` by a
    conditional UPDATE; ``sending`` is never sent again by a retry (WeChat may have taken it:
    ``clientmsgid`` = the batch's key makes WeChat itself refuse a second one, 45065), staff
    decide after looking. ``msg_id`` is WeChat's id of the accepted send."""

    class State(models.TextChoices):
        PENDING = "pending", "待发送"
        SENDING = "sending", "发送中"
        SENT = "sent", "已发送"
        FAILED = "failed", "失败"

    job = models.ForeignKey(MassSend, verbose_name="群发", on_delete=models.CASCADE, related_name="batches")
    index = models.PositiveIntegerField(verbose_name="批次")
    openids = models.JSONField(verbose_name="粉丝列表", default=list, blank=True)
    state = models.CharField(verbose_name="状态", max_length=10, choices=State.choices, default=State.PENDING)
    msg_id = models.CharField(verbose_name="微信消息 ID", max_length=64, blank=True)
    error = models.TextField(verbose_name="错误", blank=True)
    claimed_at = models.DateTimeField(verbose_name="领取时间", null=True, blank=True)
    sent_at = models.DateTimeField(verbose_name="发送时间", null=True, blank=True)

    class Meta:
        verbose_name = "群发批次"
        verbose_name_plural = "群发批次"
        ordering = ["job", "index"]
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="mass_batch_job_index")]

    def __str__(self) -> str:
        return f"{self.job_id}#{self.index}"

    @property
    def client_msg_id(self) -> str:
        """WeChat's ``clientmsgid`` of this batch (at most 64 characters, unique per batch)."""
        return f"starmall-mass-{self.job_id}-{self.index}"
