"""The package's version, on the lowest floor: the tuned tables, bench records and the CLI
read it without importing the package (pyproject.toml states it too)."""
__version__: str = "0.1.0"
