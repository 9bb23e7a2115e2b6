"""Allow ``python -m pi_compact``."""

from pi_compact.cli import main

if __name__ == "__main__":
    main()
