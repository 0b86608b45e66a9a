"""The export page (finance role: ``backoffice.export_data``): choose what, dates, format."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.core.exceptions import PermissionDenied
from django.http import StreamingHttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from apps.backoffice import exports
from apps.backoffice.dates import validate_in_range
from starmall import xlsx_stream

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
    """GET with the form's fields -> the file, CSV or Excel, streamed as the rows are read; else the form."""
    if not request.user.has_perm("backoffice.export_data"):
        raise PermissionDenied("需要权限 backoffice.export_data")
    today = timezone.localdate()
    form = ExportForm(request.GET or None, initial={"start": today - dt.timedelta(days=6), "end": today, "fmt": "csv"})
    if form.is_valid():
        kind, start, end, fmt = (form.cleaned_data[k] for k in ("kind", "start", "end", "fmt"))
        return streamed_file(kind, start, end, fmt)
    context = {**site.each_context(request), "title": "导出数据", "form": form}
    return TemplateResponse(request, "admin/backoffice/export.html", context)


def streamed_file(kind: str, start: dt.date, end: dt.date, fmt: str) -> StreamingHttpResponse:
    """The download of ``kind`` for the Shanghai days ``start``..``end`` as ``fmt`` ("csv" or
    "xlsx"), every export's one way out: a streaming response (nothing is built before the first
    byte, memory stays flat), an attachment named "orders-20261101-20261130.xlsx"."""
    source = exports.rows(kind, start, end)
    if fmt == "csv":
        chunks, content_type = exports.csv_lines(source), "text/csv; charset=utf-8"
    else:
        chunks, content_type = xlsx_stream.xlsx_chunks(source, exports.KINDS[kind]), xlsx_stream.CONTENT_TYPE
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{kind}-{start:%Y%m%d}-{end:%Y%m%d}.{fmt}"'
    return response
