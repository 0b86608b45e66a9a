"""Demo products have real pictures: fixtures/images copied into media by seed_demo, absolute URLs that load."""

import io

import pytest
from django.core.management import call_command
from django.test import Client
from PIL import Image

from apps.catalog.models import Product

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media")]


def test_seed_demo_pictures_load_at_absolute_urls(make_api, settings, media):
    call_command("seed_demo", stdout=io.StringIO())
    assert sorted(p.name for p in (media / "demo").iterdir())[:2] == ["product-1.png", "product-10.png"]
    # one picture per demo product; the first teacher's 30-minute service (seed_booking) shows its 60-minute one's
    covers = set(Product.objects.values_list("cover_url", flat=True))
    assert len(list((media / "demo").iterdir())) == len(covers) == 12
    assert Product.objects.count() == 13
    api = make_api()
    listing = api.get("/api/v1/products?page=1").json()["results"]
    assert listing[0]["cover_url"] == f"{settings.SITE_URL}/media/demo/product-1.png"
    detail = api.get(f"/api/v1/products/{listing[0]['id']}").json()
    assert detail["images"] == [listing[0]["cover_url"]]
    for url in {row["cover_url"] for row in listing}:
        response = Client().get(url[len(settings.SITE_URL) :])
        assert response.status_code == 200, url
        with Image.open(io.BytesIO(b"".join(response.streaming_content))) as image:
            assert image.format == "PNG" and image.size == (240, 240)
    out = io.StringIO()
    call_command("seed_demo", stdout=out)  # again: nothing copied twice
    assert "demo pictures: 0 copied" in out.getvalue()


def test_a_full_url_or_a_path_stays_absolute(make_api, make_sku, settings):
    sku = make_sku()
    Product.objects.filter(pk=sku.product_id).update(
        cover_url="https://cdn.example.com/a.png", images=["/static/x.png", "demo/y.png"]
    )
    detail = make_api().get(f"/api/v1/products/{sku.product_id}").json()
    assert detail["cover_url"] == "https://cdn.example.com/a.png"
    assert detail["images"] == [f"{settings.SITE_URL}/static/x.png", f"{settings.SITE_URL}/media/demo/y.png"]
