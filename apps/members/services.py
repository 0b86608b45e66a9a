"""members services."""
