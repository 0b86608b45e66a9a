"""Settings for a developer's machine and the demo shop (``make run``)."""

from .base import *  # noqa: F401,F403
from .base import _check, env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
SECRET_KEY = SECRET_KEY or "dev-only-insecure-secret-key-change-me"  # noqa: F405

_check()
