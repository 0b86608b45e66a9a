from starmall.errors import ShopError


class InsufficientStock(ShopError):
    """A SKU has fewer units than asked (409 ``insufficient_stock``); ``detail.sku_id`` says which."""

    code = "insufficient_stock"
    status = 409
    message = "库存不足。"
