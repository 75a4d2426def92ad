"""devicekit."""
