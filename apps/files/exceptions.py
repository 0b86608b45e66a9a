from starmall.errors import ShopError


class PayloadTooLarge(ShopError):
    """An uploaded file over its type's limit (413 ``payload_too_large``, API.md Additions)."""

    code = "payload_too_large"
    status = 413
    message = "文件过大。"
