"""JSON parsing that turns every malformed body into a 400, never a 500."""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class SafeJSONParser(JSONParser):
    """DRF's JSONParser, plus: JSON nested too deep for Python (RecursionError) is a 400."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON nested too deeply") from exc
