"""Errors of the almanac, rendered by the API as ``{"code", "message", "detail"}``."""

from __future__ import annotations

import datetime as dt

from starmall.errors import InvalidInput, NotFound


class UnknownActivity(InvalidInput):
    """A search word that is neither in the synonym table nor an almanac term (400 ``invalid``).

    ``detail`` = ``{"activity": [message], "suggestions": [close known words/terms]}``.
    """

    message = "Unknown activity."

    def __init__(self, word: str, suggestions: list[str]) -> None:
        shown = "、".join(suggestions)
        message = f"Unknown activity “{word}”; the almanac does not know this word."
        if shown:
            message += f" Did you mean: {shown}?"
        super().__init__(message, activity=[message], suggestions=suggestions)


class ActivityNeverAuspicious(InvalidInput):
    """A known activity that the almanac only ever lists under 忌 (400 ``invalid``).

    lunar-python's table has four such terms (乘船, 探病, 行丧, 词讼); a search for them could only
    ever answer an empty list, so we say why instead.
    """

    def __init__(self, word: str, terms: list[str]) -> None:
        message = (
            f"“{word}” ({'、'.join(terms)}) is only ever listed under 忌 in the almanac, "
            "so no day is 宜 for it."
        )
        super().__init__(message, activity=[message], terms=terms)


class DateOutOfRange(NotFound):
    """The asked dates are not (all) loaded (404 ``not_found``); says which ranges are loaded.

    ``detail`` = ``{"start", "end", "loaded": [{"start", "end"}, ...]}`` (dates ``YYYY-MM-DD``).
    """

    def __init__(self, start: dt.date, end: dt.date, loaded: list[tuple[dt.date, dt.date]]) -> None:
        asked = start.isoformat() if start == end else f"{start.isoformat()}..{end.isoformat()}"
        if loaded:
            ranges = ", ".join(f"{a.isoformat()}..{b.isoformat()}" for a, b in loaded)
            message = f"The almanac has no data for {asked}; loaded: {ranges}."
        else:
            message = f"The almanac has no data for {asked}; nothing is loaded (run load_almanac)."
        super().__init__(
            message,
            start=start.isoformat(),
            end=end.isoformat(),
            loaded=[{"start": a.isoformat(), "end": b.isoformat()} for a, b in loaded],
        )
