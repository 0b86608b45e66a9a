"""System checks of the shop's own (``manage.py check --deploy``).

``starmall.E001``, deploy only: one error per secret still at a value this repository makes
public (``starmall/public_secrets.py``), naming the setting, with how to make the real one as the
hint. Production settings refuse to start on the same list; under other settings this shows an
owner trying a production-like environment every such secret at once.
"""

from django.conf import settings
from django.core import checks

from starmall import public_secrets


@checks.register(checks.Tags.security, deploy=True)
def public_secrets_check(app_configs, **kwargs) -> list[checks.CheckMessage]:
    values = {secret.setting: getattr(settings, secret.setting, None) for secret in public_secrets.SECRETS}
    return [
        checks.Error(refusal.problem, hint=f"{refusal.how} (docs/DEPLOY.md §2a)", id="starmall.E001")
        for refusal in public_secrets.refusals(values)
    ]
