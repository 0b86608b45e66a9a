"""The back office's forms of the official account: the visual menu editor (a JSON field the
editor's JavaScript writes, checked by ``menus.menu_clean`` on the server) and the reply-rule
form (the chosen reply type's fields checked, the others cleared by ``rules.reply_rule_clean``).
Errors come back in Chinese next to the field they concern."""

from __future__ import annotations

import json

from django import forms

from apps.wechat_official import menus, rules
from apps.wechat_official.models import Menu, ReplyRule
from starmall.errors import InvalidInput


class MenuEditorWidget(forms.Textarea):
    """The menu's JSON in a textarea (what is posted, and what staff without JavaScript edit)
    plus the editor the script builds beside it. ``errors`` (path -> Chinese text, set by the
    form after a refused save) are shown by the editor next to their field."""

    template_name = "wechat_official/menu_editor.html"

    class Media:
        css = {"all": ["wechat_official/menu_editor.css"]}
        js = ["wechat_official/menu_editor.js"]

    def __init__(self, attrs=None):
        super().__init__(attrs={"rows": 8, "class": "menu-editor-json", **(attrs or {})})
        self.errors: dict[str, str] = {}

    def format_value(self, value):
        if isinstance(value, list | dict):
            return json.dumps(value, ensure_ascii=False, indent=1)
        return super().format_value(value)

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        context["editor"] = json.dumps(
            {
                "types": {
                    kind: {"label": label, "fields": list(fields)} for kind, (label, fields) in menus.TYPES.items()
                },
                "labels": menus.FIELD_LABELS,
                "limits": {
                    "top": menus.MAX_TOP,
                    "sub": menus.MAX_SUB,
                    "nameTop": menus.NAME_BYTES_TOP,
                    "nameSub": menus.NAME_BYTES_SUB,
                    "key": menus.KEY_BYTES,
                    "url": menus.URL_BYTES,
                    "pagepath": menus.PAGEPATH_BYTES,
                },
                "errors": self.errors,
            },
            ensure_ascii=False,
        )
        return context


class MenuForm(forms.ModelForm):
    """Name and buttons; ``buttons`` is parsed and checked here by the service's rules, and the
    checked list (each type's own fields only) is what is saved."""

    buttons = forms.CharField(label="菜单", widget=MenuEditorWidget, required=False)

    class Meta:
        model = Menu
        fields = ["name", "buttons"]

    def clean_buttons(self):
        raw = self.cleaned_data.get("buttons") or ""
        try:
            data = json.loads(raw) if raw.strip() else []
        except ValueError as exc:
            raise forms.ValidationError("菜单数据无法读取（不是有效的 JSON），请用上方的编辑器修改。") from exc
        try:
            return menus.menu_clean(data)
        except InvalidInput as exc:
            self.fields["buttons"].widget.errors = exc.detail.get("fields", {})
            raise forms.ValidationError(exc.message) from exc


class ReplyRuleForm(forms.ModelForm):
    """Every field of the rule; ``clean`` keeps the reply type's own fields (and the trigger's
    keyword / scene) and empties the others, errors under their fields."""

    class Meta:
        model = ReplyRule
        fields = [
            "name",
            "match",
            "keyword",
            "scene",
            "reply_kind",
            "text",
            "material",
            "articles",
            "priority",
            "is_active",
        ]

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            data.update(
                rules.reply_rule_clean(
                    match=data.get("match", ""),
                    keyword=data.get("keyword", ""),
                    scene=data.get("scene", ""),
                    reply_kind=data.get("reply_kind", ""),
                    text=data.get("text", ""),
                    material=data.get("material"),
                    articles=data.get("articles"),
                )
            )
        except InvalidInput as exc:
            for field, message in exc.detail.get("fields", {}).items():
                self.add_error(field if field in self.fields else None, message)
        return data
