"""Channel codes (渠道二维码) seen from outside the mini-program.

The WeChat official account calls :func:`channel_scan_record` when someone scans a channel's
QR code there; the mini-program's own scans are counted at login (``referral.login_scene``).
"""

from __future__ import annotations

from apps.distribution import referral


def channel_scan_record(code: str) -> bool:
    """Count one visit to a channel (a scan of its official-account QR code); True if the
    channel exists, else False (nothing counted). ``code``: the QR code's scene, the channel
    code itself (``chA``) or the mini-program's form ``c=chA``. One conditional ``visits + 1``
    UPDATE; safe to call concurrently (the caller deduplicates WeChat's repeats)."""
    code = (code or "").strip()
    return referral.channel_visit(code=referral.scene_parse(code).get("c", code)) is not None
