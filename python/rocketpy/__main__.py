"""``python -m rocketpy``: the same as the ``rocketpy`` command."""

from rocketpy.cli import main

main()
