from starmall.errors import ShopError


class SlotUnavailable(ShopError):
    """The slot is full, closed, past or not this product's teacher (409 ``slot_unavailable``)."""

    code = "slot_unavailable"
    status = 409
    message = "该时段已被预约或已停止预约，请选择其他时段。"
