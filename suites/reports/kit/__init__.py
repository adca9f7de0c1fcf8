"""The render kit every report shares: the HTML page, the banner, plot labels and saving, and
compile break-even."""
