"""The members app's refusals (rendered by ``starmall.api.exceptions``)."""

from starmall.errors import NotFound


class CardUnavailable(NotFound):
    """No such member card on sale (404 ``not_found``)."""

    message = "该会员卡不存在或已下架。"
