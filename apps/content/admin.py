"""The storefront in the back office: home-page blocks (order, on/off, time window), article
categories and articles (draft/published, cover, rich HTML, linked products), favourites (read).

Saving or deleting a home-page block drops the cached home page (``apps.content.apps``).
Article HTML is stored as typed and sanitized when the API serves it
(``apps.content.sanitize.safe_html``); the page shows the sanitized preview.
"""

from django.contrib import admin
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from apps.content.models import Article, ArticleCategory, Banner, Favourite, HotSearch, NavItem, Notice
from apps.content.sanitize import safe_html
from starmall.admin import ChangedFieldsAdmin, ReadOnlyModelAdmin

BLOCK_LIST = ["sort", "is_active", "starts_at", "ends_at"]


class HomeBlockAdmin(ChangedFieldsAdmin):
    list_editable = ["sort", "is_active"]
    list_filter = ["is_active"]


@admin.register(Banner)
class BannerAdmin(HomeBlockAdmin):
    list_display = ["id", "image", "link", *BLOCK_LIST]


@admin.register(NavItem)
class NavItemAdmin(HomeBlockAdmin):
    list_display = ["id", "title", "icon", "link", *BLOCK_LIST]


@admin.register(HotSearch)
class HotSearchAdmin(HomeBlockAdmin):
    list_display = ["id", "word", *BLOCK_LIST]


@admin.register(Notice)
class NoticeAdmin(HomeBlockAdmin):
    list_display = ["id", "text", *BLOCK_LIST]


@admin.register(ArticleCategory)
class ArticleCategoryAdmin(ChangedFieldsAdmin):
    list_display = ["id", "name", "sort"]
    list_editable = ["sort"]


@admin.register(Article)
class ArticleAdmin(ChangedFieldsAdmin):
    list_display = ["id", "title", "category", "status", "published_at", "views"]
    list_filter = ["status", "category"]
    search_fields = ["title"]
    filter_horizontal = ["products"]
    readonly_fields = ["views", "created_at", "safe_preview"]
    fields = [
        "category",
        "title",
        "cover",
        "summary",
        "content",
        "safe_preview",
        "status",
        "published_at",
        "products",
        "views",
        "created_at",
    ]
    actions = ["publish", "unpublish"]

    @admin.display(description="顾客看到的正文（已过滤）")
    def safe_preview(self, obj):
        if not obj.pk:
            return "-"
        return format_html("<div style='max-width:40em'>{}</div>", mark_safe(safe_html(obj.content)))  # noqa: S308 - sanitized

    def save_model(self, request, obj, form, change):
        """Publishing without a time publishes now."""
        if obj.status == Article.Status.PUBLISHED and obj.published_at is None:
            obj.published_at = timezone.now()
            form.changed_data.append("published_at")
        super().save_model(request, obj, form, change)

    @admin.action(description="发布所选文章", permissions=["change"])
    def publish(self, request, queryset):
        now = timezone.now()
        queryset.filter(status=Article.Status.DRAFT, published_at__isnull=True).update(
            status=Article.Status.PUBLISHED, published_at=now
        )
        queryset.filter(status=Article.Status.DRAFT).update(status=Article.Status.PUBLISHED)

    @admin.action(description="撤回为草稿", permissions=["change"])
    def unpublish(self, request, queryset):
        queryset.update(status=Article.Status.DRAFT)


@admin.register(Favourite)
class FavouriteAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "customer", "product", "created_at"]
    list_select_related = ["customer", "product"]
