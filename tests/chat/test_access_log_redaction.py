"""The web server's access log never shows a chat socket's API token (it travels in the URL)."""

import logging

from starmall.uvicorn_worker import RedactTokens


def test_access_log_record_has_the_token_redacted():
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", "/ws/chat/7?token=b6RxSECRET&x=1", "1.1", 101),
        None,
    )
    assert RedactTokens().filter(record) is True
    assert record.getMessage() == '127.0.0.1:5000 - "GET /ws/chat/7?token=***&x=1 HTTP/1.1" 101'
    assert "SECRET" not in record.getMessage()


def test_a_line_without_a_token_is_unchanged():
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s"',
        ("127.0.0.1:5000", "GET", "/api/v1/products?page=2"),
        None,
    )
    RedactTokens().filter(record)
    assert record.getMessage() == '127.0.0.1:5000 - "GET /api/v1/products?page=2"'
