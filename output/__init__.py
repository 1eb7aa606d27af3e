"""output layer."""
