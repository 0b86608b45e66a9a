"""A product's pictures as staff set them in the product editor: the cover and the gallery's
order, files stored through :func:`apps.files.services.upload_store` (sniffed, re-encoded, one
``Upload`` row each; staff uploads carry ``uploader_id`` :data:`STAFF_UPLOADER` = 0, no customer)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied

from apps.catalog.models import Product, Sku
from apps.files.services import upload_store
from starmall.errors import InvalidInput

STAFF_UPLOADER = 0  # Upload.uploader_id of a back-office upload (customers' ids start at 1)
MAX_IMAGES = 15


def product_image_store(*, file, user) -> str:
    """Store one uploaded picture (JPEG/PNG, see ``upload_store``) and return its storage name
    (what ``Product.cover_url`` / ``images`` keep; ``apps.files.services.public_url`` makes it a
    URL). ``user`` needs ``catalog.change_product`` or ``catalog.add_product`` (PermissionDenied).
    Raises InvalidInput / PayloadTooLarge from ``upload_store``; audio is refused."""
    if user is None or not (user.has_perm("catalog.change_product") or user.has_perm("catalog.add_product")):
        raise PermissionDenied("需要权限 catalog.change_product")
    upload = upload_store(file=file, uploader_id=STAFF_UPLOADER)
    if upload.kind != "image":
        raise InvalidInput("商品图片只能是 JPEG/PNG 图片。", file=["只能是图片"])
    return upload.name


def product_images_set(*, product_id: int, cover: str | None, images: list[str], user) -> None:
    """Set the cover (``None`` keeps it) and the gallery in the given order (at most
    :data:`MAX_IMAGES`, duplicates dropped); only these two columns are written.
    ``user`` needs ``catalog.change_product`` (PermissionDenied)."""
    if user is None or not (user.has_perm("catalog.change_product") or user.has_perm("catalog.add_product")):
        raise PermissionDenied("需要权限 catalog.change_product")
    images = list(dict.fromkeys(str(i).strip() for i in images if str(i).strip()))
    if len(images) > MAX_IMAGES:
        raise InvalidInput(f"商品图片最多 {MAX_IMAGES} 张。", images=[str(len(images))])
    fields = {"images": images}
    if cover is not None:
        fields["cover_url"] = cover
    Product.objects.filter(pk=product_id).update(**fields)


def sku_image_set(*, sku_id: int, image: str, user) -> None:
    """Set one SKU's picture (a storage name from :func:`product_image_store`; ``""`` clears it):
    only ``Sku.image_url`` is written. ``user`` needs ``catalog.change_sku`` (PermissionDenied)."""
    if user is None or not user.has_perm("catalog.change_sku"):
        raise PermissionDenied("需要权限 catalog.change_sku")
    Sku.objects.filter(pk=sku_id).update(image_url=image)
