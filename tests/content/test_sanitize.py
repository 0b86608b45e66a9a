"""Article HTML through the allow-list sanitizer: the usual XSS payloads come back harmless."""

import pytest

from apps.content.sanitize import safe_html

PAYLOADS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "<img src=x onerror=alert(1)>",
    '<img src="https://cdn.example/a.png" onload="alert(1)">',
    "<svg onload=alert(1)><circle r=1></circle></svg>",
    '<a href="javascript:alert(1)">x</a>',
    '<a href="JaVaScRiPt:alert(1)">x</a>',
    '<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">x</a>',
    '<a href="&#x6A;avascript&colon;alert(1)">x</a>',
    '<a href=" javascript:alert(1)">x</a>',
    '<a href="vbscript:msgbox(1)">x</a>',
    '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
    '<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">',
    '<p style="background:url(javascript:alert(1))">x</p>',
    '<div style="width: expression(alert(1))">x</div>',
    "<iframe src=https://evil.example></iframe>",
    "<object data=javascript:alert(1)></object>",
    "<body onload=alert(1)>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)></style></mglyph></table></mtext></math>",
    "<style>@import 'https://evil.example/x.css';</style>",
    '<form action="javascript:alert(1)"><input type=submit></form>',
    "<details open ontoggle=alert(1)>",
    '<a href="java\tscript:alert(1)">x</a>',
    '"><script>alert(1)</script>',
    "<!--<script>alert(1)</script>-->",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_safe_html_leaves_nothing_executable(payload):
    out = safe_html(payload).lower()
    for bad in (
        "<script",
        "onerror",
        "onload",
        "ontoggle",
        "javascript:",
        "vbscript:",
        "data:",
        "<iframe",
        "<object",
        "<style",
        "style=",
        "expression(",
        "<svg",
        "<form",
        "<body",
    ):
        assert bad not in out, (payload, out)


def test_safe_html_keeps_rich_text_and_safe_links():
    html = (
        "<h2>标题</h2><p><strong>粗</strong> <em>斜</em></p><ul><li>一</li></ul>"
        '<a href="https://shop.example/p/1" title="t">看</a><img src="https://cdn.example/a.png" alt="图">'
    )
    out = safe_html(html)
    assert "<h2>标题</h2>" in out and "<strong>粗</strong>" in out and "<li>一</li>" in out
    assert '<a href="https://shop.example/p/1" title="t" rel="noopener noreferrer">看</a>' in out
    assert '<img src="https://cdn.example/a.png" alt="图">' in out


def test_safe_html_keeps_the_text_of_a_dropped_tag_but_not_scripts():
    assert safe_html("<marquee>走马灯</marquee><script>var secret=1</script>") == "走马灯"
