"""The web workers' HTTP protocol writes each response's head with its body (starmall/uvicorn_worker.py)."""

from __future__ import annotations

import asyncio

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from starmall.uvicorn_worker import OneWriteHttpToolsProtocol, ShopUvicornWorker


class Transport:
    """What the event loop's TCP transport shows the protocol: every ``write`` recorded."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name, default=None):
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _serve(app, *requests: bytes) -> Transport:
    """Feed ``requests`` (one ``data_received`` each) to the protocol serving ``app``; the writes."""

    async def run() -> Transport:
        config = Config(app=app, http=OneWriteHttpToolsProtocol, lifespan="off", access_log=False)
        config.load()
        protocol = config.http_protocol_class(config=config, server_state=ServerState(), app_state={})
        transport = Transport()
        protocol.connection_made(transport)
        for data in requests:
            protocol.data_received(data)
            for _ in range(20):  # let the request's task run to its end
                await asyncio.sleep(0)
        protocol.connection_lost(None)
        return transport

    return asyncio.run(run())


async def _ok(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


GET = b"GET / HTTP/1.1\r\nHost: shop\r\n\r\n"


def test_the_shops_workers_use_the_protocol():
    assert ShopUvicornWorker.CONFIG_KWARGS["http"] == "starmall.uvicorn_worker:OneWriteHttpToolsProtocol"


def test_a_response_is_one_write_of_its_head_and_body():
    transport = _serve(_ok, GET)

    assert len(transport.writes) == 1
    head, _, body = transport.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-type: text/plain" in head
    assert b"transfer-encoding: chunked" in head  # no content-length: uvicorn's own framing, unchanged
    assert body == b"2\r\nok\r\n0\r\n\r\n"


async def _path(scope, receive, send):
    """Answers the request's path, with a content-length."""
    body = scope["path"].encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


def test_two_pipelined_requests_get_one_write_each_in_order():
    transport = _serve(_path, b"GET /a HTTP/1.1\r\nHost: shop\r\n\r\nGET /bb HTTP/1.1\r\nHost: shop\r\n\r\n")

    assert len(transport.writes) == 2
    assert transport.writes[0].endswith(b"content-length: 2\r\n\r\n/a")
    assert transport.writes[1].endswith(b"content-length: 3\r\n\r\n/bb")


def test_a_head_request_gets_its_head_when_the_response_ends():
    transport = _serve(_path, b"HEAD /ok HTTP/1.1\r\nHost: shop\r\n\r\n")

    assert len(transport.writes) == 1
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert transport.writes[0].endswith(b"content-length: 3\r\n\r\n")


def test_a_streamed_response_sends_its_head_with_the_first_chunk_then_each_chunk():
    async def stream(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"6")]})
        await send({"type": "http.response.body", "body": b"abc", "more_body": True})
        await send({"type": "http.response.body", "body": b"def"})

    transport = _serve(stream, GET)

    assert len(transport.writes) == 2
    assert transport.writes[0].endswith(b"\r\n\r\nabc")
    assert transport.writes[1] == b"def"


def test_100_continue_goes_out_at_once_before_the_response():
    async def echo(scope, receive, send):
        message = await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": message["body"]})

    request = b"POST / HTTP/1.1\r\nHost: shop\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"
    transport = _serve(echo, request, b"hi")

    assert transport.writes[0] == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert len(transport.writes) == 2
    assert transport.writes[1].startswith(b"HTTP/1.1 200 OK\r\n") and transport.writes[1].endswith(b"\r\n\r\nhi")


@pytest.mark.parametrize("after_head", [True, False])
def test_an_app_failing_after_its_head_sends_the_head_and_closes(after_head):
    async def failing(scope, receive, send):
        if after_head:
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        raise RuntimeError("boom")

    transport = _serve(failing, GET)

    assert len(transport.writes) == 1
    if after_head:  # uvicorn closes a response it cannot finish: the head held is sent first
        assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n") and transport.closed
    else:  # uvicorn's own 500, in one write
        assert transport.writes[0].startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
        assert transport.writes[0].endswith(b"Internal Server Error")
