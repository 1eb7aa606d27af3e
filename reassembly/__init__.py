"""reassembly layer."""
