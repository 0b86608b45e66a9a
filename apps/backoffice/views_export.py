"""The export page (finance role: ``backoffice.export_data``): choose what, dates, format."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from apps.backoffice import exports
from apps.backoffice.dates import validate_in_range

MAX_DAYS = 366


class ExportForm(forms.Form):
    kind = forms.ChoiceField(label="数据", choices=list(exports.KINDS.items()))
    # Both within the shop's calendar (apps.backoffice.dates): 9999-12-31 overflowed the end bound.
    start = forms.DateField(
        label="开始日期",
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        validators=[validate_in_range],
    )
    end = forms.DateField(
        label="结束日期（含）",
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        validators=[validate_in_range],
    )
    fmt = forms.ChoiceField(label="格式", choices=[("csv", "CSV"), ("xlsx", "Excel (.xlsx)")])

    def clean(self):
        data = super().clean()
        start, end = data.get("start"), data.get("end")
        if start and end and (end < start or (end - start).days >= MAX_DAYS):
            raise forms.ValidationError(f"日期范围需在 1 到 {MAX_DAYS} 天之间，且结束不早于开始")
        return data


def export_view(request, site):
    """GET with the form's fields -> the file (CSV streamed, Excel write-only); else the form."""
    if not request.user.has_perm("backoffice.export_data"):
        raise PermissionDenied("需要权限 backoffice.export_data")
    today = timezone.localdate()
    form = ExportForm(request.GET or None, initial={"start": today - dt.timedelta(days=6), "end": today, "fmt": "csv"})
    if form.is_valid():
        kind, start, end, fmt = (form.cleaned_data[k] for k in ("kind", "start", "end", "fmt"))
        name = f"{kind}-{start:%Y%m%d}-{end:%Y%m%d}"
        source = exports.rows(kind, start, end)
        if fmt == "csv":
            response = StreamingHttpResponse(exports.csv_lines(source), content_type="text/csv; charset=utf-8")
            response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
            return response
        return FileResponse(
            exports.xlsx_file(source, exports.KINDS[kind]),
            as_attachment=True,
            filename=f"{name}.xlsx",
            content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        )
    context = {**site.each_context(request), "title": "导出数据", "form": form}
    return TemplateResponse(request, "admin/backoffice/export.html", context)
