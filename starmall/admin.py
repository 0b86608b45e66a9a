"""Admin building blocks shared by the apps; no back-office page can bypass a rule of the API:

* A state change is an admin action that calls the same service as the API, gated by a named
  permission (``@admin.action(permissions=[...])`` + ``has_<x>_permission``) and checked again
  inside the action with :func:`require_perm`, so a POST crafted by hand is refused too.
* A page with nothing staff may edit has no save button (``has_change_permission`` False).
* A save writes only the fields the form changed (:class:`ChangedFieldsAdmin`), never a value
  read when the page was opened: status, money, stock and counters move in services only.
* Bulk actions report per object what happened and why (:func:`report`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied

MAX_MESSAGES = 50  # per-object lines shown after a bulk action; the summary counts all


def require_perm(request, perm: str) -> None:
    """Raise PermissionDenied unless the staff user holds ``perm`` ("app_label.codename")."""
    if not request.user.has_perm(perm):
        raise PermissionDenied(f"需要权限 {perm}")


@dataclass(frozen=True)
class Outcome:
    """What a bulk action did to one object: ``label`` (order_no...), message ``level``, ``text``."""

    label: str
    level: int
    text: str

    @property
    def done(self) -> bool:
        return self.level == messages.SUCCESS


def report(request, verb: str, outcomes: list[Outcome]) -> None:
    """One message per object at its own level (success / warning / error), then a summary.

    The summary is green only when every object was done, amber when some were, red when none.
    """
    for outcome in outcomes[:MAX_MESSAGES]:
        messages.add_message(request, outcome.level, f"{outcome.label}: {outcome.text}")
    if len(outcomes) > MAX_MESSAGES:
        messages.warning(request, f"…另有 {len(outcomes) - MAX_MESSAGES} 条结果未逐条显示")
    done = sum(o.done for o in outcomes)
    level = messages.SUCCESS if done == len(outcomes) else messages.WARNING if done else messages.ERROR
    messages.add_message(request, level, f"{verb}：成功 {done} / 共 {len(outcomes)}")


def _changed_columns(obj, changed_data: list[str]) -> list[str]:
    """The concrete, non-m2m model fields among a form's ``changed_data``."""
    concrete = {f.name for f in obj._meta.concrete_fields}
    return [name for name in changed_data if name in concrete]


def save_changed_fields(obj, changed_data: list[str]) -> None:
    """``obj.save(update_fields=<changed columns>)``: an UPDATE of what staff changed, nothing else.

    A full-row save would write back every value read when the page was opened (an order's
    status, a customer's balance, a SKU's stock) and undo a change made meanwhile.
    """
    fields = _changed_columns(obj, changed_data)
    if fields:
        obj.save(update_fields=fields)


class ChangedFieldsAdmin(admin.ModelAdmin):
    """A ModelAdmin whose saves (the page and its inlines) write only the changed fields."""

    def save_model(self, request, obj, form, change):
        if change:
            save_changed_fields(obj, form.changed_data)
        else:
            obj.save()

    def save_formset(self, request, form, formset, change):
        instances = formset.save(commit=False)
        for obj in formset.deleted_objects:
            obj.delete()
        changed = {id(obj): fields for obj, fields in formset.changed_objects}
        for obj in instances:
            if id(obj) in changed:
                save_changed_fields(obj, changed[id(obj)])
            else:
                obj.save()
        formset.save_m2m()


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """For append-only or machine-written rows (payments, notifications, almanac days):
    staff can look and run actions, never add, edit or delete."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
