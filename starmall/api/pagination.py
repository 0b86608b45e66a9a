"""Pagination of API.md: ``{"count", "next", "previous", "results"}`` with ``?page=``."""

import re

from drf_spectacular.utils import OpenApiParameter
from rest_framework import pagination
from rest_framework.exceptions import NotFound, ValidationError

MAX_PAGE_SIZE = 100
_DIGITS = re.compile(r"[0-9]{1,9}")

#: The two query parameters as the schema states them (for views that declare them by hand).
PAGE_PARAMETERS = [
    OpenApiParameter("page", {"type": "integer", "minimum": 1}, description="1, 2, ..."),
    OpenApiParameter(
        "page_size",
        {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
        description=f"rows per page, 1 to {MAX_PAGE_SIZE} (default 20)",
    ),
]


class PageNumberPagination(pagination.PageNumberPagination):
    """20 per page by default; ``?page_size=`` 1 to 100, anything else 400 ``invalid``; ``?page=``
    a number from 1, anything else (or past the last page) 404 ``not_found``."""

    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
    last_page_strings = ()

    def get_page_size(self, request):
        text = request.query_params.get(self.page_size_query_param)
        if text is None:
            return self.page_size
        if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= self.max_page_size:
            raise ValidationError({self.page_size_query_param: [f"请填写 1 到 {self.max_page_size} 的整数。"]})
        return int(text)

    def get_page_number(self, request, paginator):
        text = request.query_params.get(self.page_query_param)
        if text is None:
            return 1
        if not _DIGITS.fullmatch(text):
            raise NotFound()
        return int(text)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"] = {"type": "integer", "minimum": 1}
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["maximum"] = self.max_page_size
        return parameters
