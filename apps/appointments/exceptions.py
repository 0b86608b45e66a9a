from starmall.errors import ShopError


class SlotUnavailable(ShopError):
    """The slot is full, closed, past or not this product's teacher (409 ``slot_unavailable``)."""

    code = "slot_unavailable"
    status = 409
    message = "This time slot is no longer available; please pick another."
