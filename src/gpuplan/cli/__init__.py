"""Command-line presenter: parses options, calls the library, renders results."""
