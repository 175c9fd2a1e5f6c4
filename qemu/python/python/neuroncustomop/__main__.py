"""``python -m neuroncustomop SCRIPT.py [ARGS...]``: the vendor's script, unchanged (see
``neuroncustomop._runner``)."""

if __name__ == "__main__":
    from ._runner import main

    main()
