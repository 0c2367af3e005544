"""One module per external format: bytes → typed objects and back. No printing, no shell imports."""
