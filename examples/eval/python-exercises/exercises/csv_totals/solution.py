import csv
import io


def column_totals(text):
    """Sum each numeric column of CSV text with a header row: {column: total}."""
    rows = list(csv.DictReader(io.StringIO(text)))
    totals = {}
    for name in (rows[0].keys() if rows else []):
        try:
            totals[name] = sum(float(r[name]) for r in rows)
        except ValueError:
            pass
    return totals
