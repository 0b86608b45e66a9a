"""Helpers of the back-office tests: hand-made action POSTs, form data, messages."""

from __future__ import annotations

from django.forms import CheckboxInput, MultiWidget
from django.urls import reverse


def request_refund(api, order_no: str):
    response = api.post(f"/api/v1/orders/{order_no}/refund", {"reason": "不想要了"}, format="json")
    assert response.status_code == 202, response.json()
    return response.json()


def form_data(response) -> dict:
    """The POST data the rendered admin change form would send unchanged (page and inlines)."""
    forms = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        forms += [inline.formset.management_form, *inline.formset.forms]
    data = {}
    for form in forms:
        for bound in form:
            value = bound.value()  # already prepared for the widget
            widget = bound.field.widget
            if isinstance(widget, CheckboxInput):
                if value:
                    data[bound.html_name] = "on"
            elif isinstance(widget, MultiWidget):
                for i, part in enumerate(widget.decompress(value)):
                    data[f"{bound.html_name}_{i}"] = "" if part is None else str(part)
            elif value is not None:
                data[bound.html_name] = value
    data["_save"] = "Save"
    return data


def action(client, model_label: str, name: str, pks, **extra):
    """POST an admin action by hand (as the changelist's form would); returns the response."""
    app_label, model = model_label.split(".")
    return client.post(
        reverse(f"admin:{app_label}_{model}_changelist"),
        {"action": name, "_selected_action": [str(pk) for pk in pks], **extra},
        follow=True,
    )


def texts(response) -> list[tuple[str, str]]:
    """The messages shown after a request: [(level tag, text)]."""
    return [(m.level_tag, m.message) for m in response.context["messages"]]
