"""Errors of the almanac, rendered by the API as ``{"code", "message", "detail"}``."""

from __future__ import annotations

import datetime as dt

from starmall.errors import InvalidInput, NotFound


class UnknownActivity(InvalidInput):
    """A search word that is neither in the synonym table nor an almanac term (400 ``invalid``).

    ``detail`` = ``{"activity": [message], "suggestions": [close known words/terms]}``.
    """

    message = "黄历里没有这件事。"

    def __init__(self, word: str, suggestions: list[str]) -> None:
        shown = "、".join(suggestions)
        message = f"黄历里没有“{word}”这件事。"
        if shown:
            message += f"您是不是要找：{shown}？"
        super().__init__(message, activity=[message], suggestions=suggestions)


class ActivityNeverAuspicious(InvalidInput):
    """A known activity that the almanac only ever lists under 忌 (400 ``invalid``).

    lunar-python's table has four such terms (乘船, 探病, 行丧, 词讼); a search for them could only
    ever answer an empty list, so we say why instead.
    """

    def __init__(self, word: str, terms: list[str]) -> None:
        message = f"“{word}”（{'、'.join(terms)}）在黄历中只列在忌里，没有哪一天宜做。"
        super().__init__(message, activity=[message], terms=terms)


class DateOutOfRange(NotFound):
    """The asked dates are not (all) loaded (404 ``not_found``); says which ranges are loaded.

    ``detail`` = ``{"start", "end", "loaded": [{"start", "end"}, ...]}`` (dates ``YYYY-MM-DD``).
    """

    def __init__(self, start: dt.date, end: dt.date, loaded: list[tuple[dt.date, dt.date]]) -> None:
        asked = start.isoformat() if start == end else f"{start.isoformat()} 至 {end.isoformat()}"
        if loaded:
            ranges = "、".join(f"{a.isoformat()} 至 {b.isoformat()}" for a, b in loaded)
            message = f"暂无 {asked} 的黄历；可查询的日期：{ranges}。"
        else:
            message = f"暂无 {asked} 的黄历；尚未导入任何黄历数据（请运行 load_almanac）。"
        super().__init__(
            message,
            start=start.isoformat(),
            end=end.isoformat(),
            loaded=[{"start": a.isoformat(), "end": b.isoformat()} for a, b in loaded],
        )
