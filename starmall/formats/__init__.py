"""Date formats of the back office (``FORMAT_MODULE_PATH``), over Django's own per language."""
