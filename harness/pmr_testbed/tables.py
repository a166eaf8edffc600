"""A table of strings, (header, rows of cells): a CSV file as
metrics.read_table reads it, and a table as the analysis modules return it."""

Table = tuple[list[str], list[list[str]]]
