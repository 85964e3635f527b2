"""``python -m icefloe.cli``: the ``icefloe`` command."""

from icefloe.cli.main import main

raise SystemExit(main())
