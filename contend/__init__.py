"""contend: property-based verification and load tests for Redis concurrency primitives."""

__version__ = "0.1.0"
