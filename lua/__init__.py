"""lua layer."""
