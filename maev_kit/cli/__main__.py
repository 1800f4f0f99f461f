"""``python -m maev_kit.cli``: the ``maev`` command."""

from maev_kit.cli._main import main

if __name__ == "__main__":  # pragma: no cover
    main()
