"""Every system actor code a service writes has a Chinese label in the back office's logs."""

import pathlib
import re

from starmall.admin_display import ACTORS, actor_text

APPS = pathlib.Path(__file__).resolve().parents[2] / "apps"


def test_every_system_actor_written_by_the_apps_has_a_chinese_label():
    codes = set()
    for path in APPS.rglob("*.py"):
        codes |= set(re.findall(r'"(system:[a-z-]+)"', path.read_text(encoding="utf-8")))
    assert "system:cancel-policy" in codes  # the walk reads the services
    missing = sorted(code for code in codes if code not in ACTORS)
    assert missing == []
    assert actor_text("system:cancel-policy") == "系统（按取消政策）"
