"""``?per=20|50|100``: how many rows a change list shows, chosen by the staff member.

The order list opens at 20 rows (what a screen shows; the shop-admin lists staff know, CRMEB's
among them, open at 20 with a size chooser) and offers 50 and 100 (``docs/BACKOFFICE.md``).
The choice stays in the page, sort, filter and search links (they keep the query string) and is
never read as a filter; any other value is the default.
"""

from __future__ import annotations

from django.contrib.admin.views.main import PAGE_VAR, ChangeList

PER_VAR = "per"
CHOICES = (20, 50, 100)


def per_page(request, default: int) -> int:
    """The rows per page ``request`` asks for (one of :data:`CHOICES`), else ``default``."""
    asked = request.GET.get(PER_VAR, "")
    return int(asked) if asked.isdigit() and int(asked) in CHOICES else default


class PerPageChangeList(ChangeList):
    """A change list whose page size is :func:`per_page` and that offers the choices
    (``per_page_links``: ``[{"rows", "url", "active"}]``)."""

    def get_filters_params(self, params=None):
        lookups = super().get_filters_params(params)
        lookups.pop(PER_VAR, None)
        return lookups

    def get_results(self, request):
        self.list_per_page = per_page(request, self.list_per_page)
        super().get_results(request)

    @property
    def per_page_links(self) -> list[dict]:
        return [
            {
                "rows": rows,
                "url": self.get_query_string({PER_VAR: rows}, remove=[PAGE_VAR]),
                "active": rows == self.list_per_page,
            }
            for rows in CHOICES
        ]


class PerPageMixin:
    """For a ModelAdmin: the page size chosen with ``?per=`` (:class:`PerPageChangeList`), the
    choices shown under the list (``admin/starmall/per_page.html``)."""

    list_after_template = "admin/starmall/per_page.html"

    def get_changelist(self, request, **kwargs):
        return PerPageChangeList
