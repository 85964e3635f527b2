"""``SCHEMATHESIS_HOOKS`` module for the schemathesis command line: installs
``deep_requests.steer`` as a global ``flatmap_case`` hook (a separate module, so that importing
``deep_requests`` in the suite installs nothing globally)."""

import schemathesis

from tests.support.deep_requests import steer

schemathesis.hook("flatmap_case")(steer)
