"""Allow ``python -m pi_compact``."""

import sys

from pi_compact.cli import main

if __name__ == "__main__":
    sys.exit(main())
