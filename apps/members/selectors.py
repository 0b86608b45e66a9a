"""members selectors."""
