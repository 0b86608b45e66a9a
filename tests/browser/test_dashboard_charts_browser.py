"""The dashboard's charts are as wide as their boxes on first paint and after a resize, measured
in Chromium at 1,400 x 900 (no full-page screenshot: that resizes the page and hides the fault)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from apps.backoffice.roles import sync_roles

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "pw-browser-1"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "test-screenshots"

MEASURE = """(id) => {
  const box = document.getElementById(id);
  const canvas = box.querySelector('canvas');
  return {box: box.clientWidth, canvas: canvas ? canvas.getBoundingClientRect().width : 0,
          height: canvas ? canvas.getBoundingClientRect().height : 0};
}"""


def _measure(page, chart_id: str) -> dict:
    page.wait_for_selector(f"#{chart_id} canvas", state="attached")
    return page.evaluate(MEASURE, chart_id)


@pytest.mark.parametrize("role", ["owner", "运营"])
def test_charts_fill_their_boxes_on_first_paint_and_after_resize(page_for, base_url, role, settings):
    sync_roles(Group, Permission)
    if role == "owner":
        get_user_model().objects.create_superuser(role, password=PASSWORD)
    else:
        get_user_model().objects.create_user(role, password=PASSWORD, is_staff=True).groups.add(
            Group.objects.get(name=role)
        )
    page = page_for(role, PASSWORD)  # 1,400 x 900, logged in, on /admin/
    page.wait_for_load_state("load")
    sizes = {}
    for chart in ("bo-revenue-chart", "bo-slot-chart"):
        sizes[chart] = first = _measure(page, chart)
        assert first["box"] > 300, first
        assert abs(first["canvas"] - first["box"]) <= 2, (chart, first)  # not ECharts' 100 px default
        assert first["height"] == 300, first
    page.locator("#bo-revenue-chart").screenshot(path=str(_shot_path(f"20-dashboard-chart-{role}")))
    page.set_viewport_size({"width": 1000, "height": 900})
    page.wait_for_timeout(400)
    after = _measure(page, "bo-revenue-chart")
    assert abs(after["canvas"] - after["box"]) <= 2 and after["box"] != sizes["bo-revenue-chart"]["box"], (
        after
    )  # the box changed (the row wraps), the canvas followed
    assert ("销售额（元）" in page.content()) is (role == "owner")


def _shot_path(name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS / f"{name}.png"
