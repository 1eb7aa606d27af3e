"""Analysis layer: display filters, statistics, follow: what reads dissected packets, above the dissectors."""
