"""``python -m controller`` runs the ``table-controller`` command line."""

import sys

from controller.cli import main

if __name__ == "__main__":
    sys.exit(main())
