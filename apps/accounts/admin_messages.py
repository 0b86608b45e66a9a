"""Back office of subscription messages and phone verification: the templates staff manage
(scene, kind, template id, fields map, on/off), the customers who refused a kind (43101,
read-only) and the SMS codes sent (read-only: only their hashes are stored). Beijing time."""

from django import forms
from django.contrib import admin

from apps.accounts import subscriptions
from apps.accounts.models import SmsCode, SubscribeRefusal, SubscribeTemplate
from starmall.admin import ReadOnlyModelAdmin
from starmall.admin_display import shanghai


class SubscribeTemplateForm(forms.ModelForm):
    class Meta:
        model = SubscribeTemplate
        fields = ["scene", "kind", "template_id", "fields", "is_active"]

    def clean_fields(self):  # the form field named "fields" (the map), not Model.clean_fields
        value = self.cleaned_data.get("fields") or {}
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and v for k, v in value.items()
        ):
            raise forms.ValidationError('应为 {"数值名": "模板关键词"}，如 {"order_no": "character_string1"}')
        return value

    def clean(self):
        data = super().clean()
        kind, scene = data.get("kind"), data.get("scene")
        if kind and scene and subscriptions.DEFAULTS[kind][0] != scene:
            self.add_error(
                "scene",
                f"「{SubscribeTemplate.Kind(kind).label}」属于场景「"
                f"{SubscribeTemplate.Scene(subscriptions.DEFAULTS[kind][0]).label}」",
            )
        if kind and isinstance(data.get("fields"), dict):
            names = set(subscriptions.VALUE_NAMES[kind].split(", "))
            unknown = set(data["fields"]) - names
            if unknown:
                self.add_error(
                    "fields", f"未知的数值名：{', '.join(sorted(unknown))}；可用：{subscriptions.VALUE_NAMES[kind]}"
                )
        return data


@admin.register(SubscribeTemplate)
class SubscribeTemplateAdmin(admin.ModelAdmin):
    form = SubscribeTemplateForm
    list_display = ["kind", "scene", "template_id", "value_names", "is_active", "updated"]
    list_filter = ["scene", "is_active"]

    @admin.display(description="可用数值名")
    def value_names(self, row: SubscribeTemplate) -> str:
        return subscriptions.VALUE_NAMES.get(row.kind, "")

    @admin.display(description="更新时间", ordering="updated_at")
    def updated(self, row: SubscribeTemplate) -> str:
        return shanghai(row.updated_at)


@admin.register(SubscribeRefusal)
class SubscribeRefusalAdmin(ReadOnlyModelAdmin):
    list_display = ["customer", "kind", "template_id", "refused", "times"]
    list_filter = ["kind"]
    search_fields = ["customer__openid", "customer__nickname"]

    @admin.display(description="最近拒收时间", ordering="refused_at")
    def refused(self, row: SubscribeRefusal) -> str:
        return shanghai(row.refused_at)


@admin.register(SmsCode)
class SmsCodeAdmin(ReadOnlyModelAdmin):
    list_display = ["phone", "customer", "client_ip", "sent", "expires", "used", "attempts"]
    search_fields = ["phone", "customer__openid"]
    exclude = ["code_hash"]

    @admin.display(description="发送时间", ordering="created_at")
    def sent(self, row: SmsCode) -> str:
        return shanghai(row.created_at)

    @admin.display(description="过期时间")
    def expires(self, row: SmsCode) -> str:
        return shanghai(row.expires_at)

    @admin.display(description="使用时间")
    def used(self, row: SmsCode) -> str:
        return shanghai(row.used_at)
