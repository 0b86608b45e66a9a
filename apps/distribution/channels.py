"""Channel codes (渠道二维码) seen from outside the mini-program.

The WeChat official account calls :func:`channel_scan_record` when someone scans a channel's
QR code there; the mini-program's own scans are counted at login (``referral.login_scene``).
"""

from __future__ import annotations

from apps.distribution import referral


def channel_scan_record(code: str) -> bool:
    """Count one visit to channel ``code`` (a scan); True if the channel exists, else False
    (nothing counted). One conditional ``visits + 1`` UPDATE; safe to call concurrently."""
    return referral.channel_visit(code=(code or "").strip()) is not None
