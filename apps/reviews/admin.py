"""Reviews in the back office: read-only rows; reply and hide/show through the services,
gated by ``reviews.reply_review`` / ``reviews.moderate_review``."""

from django.contrib import admin, messages
from django.shortcuts import render

from apps.reviews import services
from apps.reviews.models import Review
from starmall.admin import Outcome, ReadOnlyModelAdmin, report, require_perm
from starmall.errors import ShopError


def _actor(request) -> str:
    return f"staff:{request.user.username}"


@admin.register(Review)
class ReviewAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "product", "rating", "text", "customer", "is_hidden", "reply", "created_at"]
    list_filter = ["rating", "is_hidden"]
    search_fields = ["text", "product__name", "order__order_no", "customer__nickname"]
    list_select_related = ["product", "customer"]
    actions = ["reply", "hide", "show"]

    def has_reply_permission(self, request):
        return request.user.has_perm("reviews.reply_review")

    def has_moderate_permission(self, request):
        return request.user.has_perm("reviews.moderate_review")

    @admin.action(description="回复评价（显示在评价下方）", permissions=["reply"])
    def reply(self, request, queryset):
        require_perm(request, "reviews.reply_review")
        if not request.POST.get("apply"):
            return render(
                request,
                "admin/starmall/text_action.html",
                {
                    **self.admin_site.each_context(request),
                    "title": "回复评价",
                    "label": "回复内容（顾客可见）",
                    "action": "reply",
                    "objects": list(queryset.order_by("pk")),
                    "required": True,
                },
            )
        outcomes = []
        for review in queryset.order_by("pk"):
            try:
                services.review_reply(review_id=review.pk, text=request.POST.get("text", ""), actor=_actor(request))
                outcomes.append(Outcome(f"#{review.pk}", messages.SUCCESS, "已回复"))
            except ShopError as exc:
                outcomes.append(Outcome(f"#{review.pk}", messages.WARNING, f"未回复：{exc.message}"))
        report(request, "回复评价", outcomes)
        return None

    def _set_hidden(self, request, queryset, hidden: bool) -> None:
        require_perm(request, "reviews.moderate_review")
        verb = "隐藏" if hidden else "显示"
        outcomes = []
        for review in queryset.order_by("pk"):
            if services.review_set_hidden(review_id=review.pk, hidden=hidden, actor=_actor(request)):
                outcomes.append(Outcome(f"#{review.pk}", messages.SUCCESS, f"已{verb}"))
            else:
                outcomes.append(Outcome(f"#{review.pk}", messages.WARNING, f"未{verb}：已经是{verb}状态"))
        report(request, f"{verb}评价", outcomes)

    @admin.action(description="隐藏评价（不展示，不计入评分）", permissions=["moderate"])
    def hide(self, request, queryset):
        self._set_hidden(request, queryset, True)

    @admin.action(description="重新显示评价", permissions=["moderate"])
    def show(self, request, queryset):
        self._set_hidden(request, queryset, False)
