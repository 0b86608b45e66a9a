"""Admin registrations of the back office (found by the admin's autodiscover): the pages whose
actions span several apps."""

from apps.backoffice import (
    admin_axes,  # noqa: F401 - the login-attempt list's action behind the delete permission
    admin_orders,  # noqa: F401 - registers the Order and AfterSale admins
    admin_settings,  # noqa: F401, E402 - registers the shop's settings page (name, logo)
)
