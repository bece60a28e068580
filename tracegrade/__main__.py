"""``python -m tracegrade`` runs the command line."""

from tracegrade.cli import main

main()
