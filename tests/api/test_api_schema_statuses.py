"""The OpenAPI schema declares the error statuses each operation can answer (ShopAutoSchema)."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator


@pytest.fixture(scope="module")
def paths():
    return SchemaGenerator().get_schema(request=None, public=True)["paths"]


def statuses(paths, method: str, path: str) -> set[str]:
    return set(paths[path][method]["responses"])


def test_private_writes_declare_every_error(paths):
    assert statuses(paths, "post", "/api/v1/orders") == {
        "200",
        "201",
        "400",
        "401",
        "409",
        "410",
        "413",
        "415",
        "429",
        "503",
    }
    assert statuses(paths, "post", "/api/v1/orders/confirm") == {"200", "400", "401", "404", "409", "413", "415", "503"}
    assert statuses(paths, "get", "/api/v1/orders/{order_no}/pay-status") == {"200", "401", "404", "503"}
    assert statuses(paths, "post", "/api/v1/auth/wechat/login") == {"200", "400", "413", "415", "429", "503"}


def test_every_post_declares_413(paths):
    # BodySizeLimitMiddleware answers 413 to any API POST over the limit, bodiless ones included
    # (a 2 MB body to cancel, receive or logout was an undocumented 413).
    for path in ("/api/v1/orders/{order_no}/cancel", "/api/v1/orders/{order_no}/receive", "/api/v1/auth/logout"):
        assert statuses(paths, "post", path) >= {"413", "401"}, path
    for path, ops in paths.items():
        if "post" in ops and not path.startswith("/api/v1/payments/wechat/"):
            assert "413" in ops["post"]["responses"], path


def test_public_reads_never_declare_401(paths):
    assert statuses(paths, "get", "/api/v1/categories") == {"200"}
    assert statuses(paths, "get", "/api/v1/products") == {"200", "400", "404"}  # 404: ?page= past the end
    assert statuses(paths, "get", "/api/v1/teachers/{teacher_id}/slots") == {"200", "400", "404"}
    for path, ops in paths.items():
        for method, op in ops.items():
            public = {} in op.get("security", [{}])
            assert public != ("401" in op["responses"]), (method, path)


def test_errors_use_the_error_body_and_path_parameters_are_strict(paths):
    for path, ops in paths.items():
        for method, op in ops.items():
            for status, response in op["responses"].items():
                if status.startswith(("4", "5")):
                    ref = response["content"]["application/json"]["schema"]["$ref"]
                    assert ref == "#/components/schemas/Error", (method, path, status)
    order_no = paths["/api/v1/orders/{order_no}"]["get"]["parameters"][0]["schema"]
    assert order_no == {"type": "string", "pattern": "^[0-9A-Za-z_-]{1,32}$"}
    product_id = paths["/api/v1/products/{product_id}"]["get"]["parameters"]
    assert {"type": "integer", "minimum": 1, "maximum": 2**53} in [p["schema"] for p in product_id]
    assert statuses(paths, "post", "/api/v1/payments/wechat/notify") == {"200"}  # WeChat's XML, FAIL included
