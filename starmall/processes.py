"""Child processes that never outlive their parent."""

from __future__ import annotations

import os
import signal


def die_with_parent() -> bool:
    """Linux: the calling process gets SIGTERM when its parent dies, however it dies (``kill -9``
    included): ``prctl(PR_SET_PDEATHSIG)``, the kernel's answer. Returns False where it is not
    available (not Linux). If the parent died before the call took effect (this process was
    already handed to init), SIGTERM comes at once.

    Used by the web workers (``starmall/gunicorn_conf.py``) and, as ``preexec_fn``, by the
    embedded Redis a one-off ``manage.py`` command starts (``starmall.embedded_redis.start_owned``).
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux
        return False
    if os.getppid() == 1:
        os.kill(os.getpid(), signal.SIGTERM)
    return True
