"""members admin."""
